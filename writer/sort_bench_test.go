package writer

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/testutil"
)

// cpuTime is the process's user+system CPU time: on a shared machine it
// varies less than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// vmHWM is the process's peak resident set (Linux), 0 elsewhere.
func vmHWM() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkSortedRewrite clusters 64 MiB of generated small files (10 mixed
// columns, 1-4 MiB snappy files) on (user_id, event_time) with a Hilbert
// curve at default options (64 MiB sort bound, so the run spills), and, for
// reference, rewrites the same files unsorted. It reports input MB/s, the
// peak live heap during the run and the process's peak RSS.
//
// Run with: go test ./writer -run '^$' -bench SortedRewrite -benchtime 2x
// (COMPACTORD_SORT_BENCH_MB=256 for a larger input).
func BenchmarkSortedRewrite(b *testing.B) {
	size := int64(64 << 20)
	if mb, err := strconv.ParseInt(os.Getenv("COMPACTORD_SORT_BENCH_MB"), 10, 64); err == nil && mb > 0 {
		size = mb << 20
	}
	_, tbl, snap := generatedTable(b, size, 1<<20, 4<<20, 7, nil)
	ctx := context.Background()
	var in int64
	for _, f := range snap.Files {
		in += f.Size
	}
	for _, c := range []struct {
		name string
		sort *SortSpec
	}{
		{"hilbert-2-columns", &SortSpec{Columns: [][]string{{"user_id"}, {"event_time"}}, Curve: "hilbert"}},
		{"unsorted-baseline", nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			job := &Job{ID: "all", Sources: snap.Files, Sort: c.sort}
			opts := DefaultOptions()
			b.SetBytes(in)
			runtime.GC()
			cpu0 := cpuTime()
			stop := testutil.PeakOf(5*time.Millisecond, testutil.LiveHeap)
			b.ResetTimer()
			var spills, runs, copied int
			for i := 0; i < b.N; i++ {
				objs := &attempt.Objects{}
				res, err := Rewrite(ctx, tbl, snap, job, objs, opts)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if res.Sort != nil {
					spills, runs = res.Sort.Spills, res.Sort.Runs
				}
				copied = res.CopiedRowGroups
				if err := cleanAttempt(ctx, objs, tbl); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.StopTimer()
			peak := stop()
			b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(peak)/(1<<20), "peak-live-heap-MiB")
			b.ReportMetric(float64(vmHWM())/(1<<20), "peak-rss-MiB")
			b.ReportMetric(float64(copied), "copied-rowgroups")
			if c.sort != nil {
				b.ReportMetric(float64(spills), "spills")
				b.ReportMetric(float64(runs), "runs")
			}
		})
	}
}
