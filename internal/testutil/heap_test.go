package testutil

import (
	"runtime"
	"testing"
)

// HeapInuse, read without stopping the world, is MemStats.HeapInuse.
func TestHeapInuseIsMemStatsHeapInuse(t *testing.T) {
	keep := make([][]byte, 0, 64)
	for i := 0; i < 64; i++ {
		keep = append(keep, make([]byte, 1<<20))
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	got := HeapInuse()
	if d := int64(got) - int64(ms.HeapInuse); d < -1<<20 || d > 1<<20 || got < 64<<20 {
		t.Fatalf("HeapInuse = %d, MemStats.HeapInuse = %d", got, ms.HeapInuse)
	}
	runtime.KeepAlive(keep)
}
