package testutil

import (
	"runtime/metrics"
	"sync"
	"time"
)

// PeakOf calls read every interval, from now until the returned stop is
// called, and stop returns the largest value read: the peak of a memory
// measure (HeapInuse, LiveHeap) while a test or benchmark runs.
func PeakOf(interval time.Duration, read func() uint64) (stop func() uint64) {
	var (
		peak uint64
		wg   sync.WaitGroup
		done = make(chan struct{})
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}

// HeapInuse is runtime.MemStats.HeapInuse: the bytes of in-use heap spans,
// garbage not yet collected included. It is read through runtime/metrics
// (heap objects plus the unused part of their spans), which, unlike
// runtime.ReadMemStats, does not stop the world: a sampler calling it every
// few milliseconds would otherwise preempt the code it measures.
func HeapInuse() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() + s[1].Value.Uint64()
}

// LiveHeap is the live heap as of the last GC (runtime/metrics
// /gc/heap/live:bytes, garbage excluded).
func LiveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
