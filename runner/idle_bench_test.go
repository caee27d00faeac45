package runner

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/internal/testutil/logtest"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/scheduler"
)

// writeIdleTable writes a file:// table of three files (three commits of
// one add each after the protocol and metadata).
func writeIdleTable(b *testing.B, dir string) {
	b.Helper()
	ctx := context.Background()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	tbl, err := delta.OpenTable(ctx, "file://"+dir)
	if err != nil {
		b.Fatal(err)
	}
	defer tbl.Close()
	created := int64(1_700_000_000_000)
	p := actions.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
	m := actions.Metadata{ID: "idle", Format: actions.Format{Provider: "parquet", Options: map[string]string{}},
		SchemaString:     `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}`,
		PartitionColumns: []string{}, CreatedTime: &created, Configuration: map[string]string{}}
	logtest.Commit(b, tbl, 0, actions.Action{Protocol: &p}, actions.Action{Metadata: &m})
	for v := int64(1); v <= 3; v++ {
		logtest.Commit(b, tbl, v, actions.Action{Add: &actions.Add{Path: fmt.Sprintf("part-%05d.parquet", v), Size: 1000 + v,
			PartitionValues: map[string]*string{}, ModificationTime: created + v, DataChange: true,
			Stats: `{"numRecords":10,"minValues":{"id":1},"maxValues":{"id":10},"nullCount":{"id":0}}`}})
	}
}

// rss is the process's resident set (bytes) from /proc/self/statm.
func rss(b *testing.B) uint64 {
	raw, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		b.Skip("no /proc/self/statm")
	}
	f := strings.Fields(string(raw))
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

type memNow struct {
	heap, stack, rss uint64
	goroutines       int
}

func measure(b *testing.B) memNow {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memNow{heap: ms.HeapAlloc, stack: ms.StackInuse, rss: rss(b), goroutines: runtime.NumGoroutine()}
}

// BenchmarkIdleTableMemory watches 2,000 and 10,000 idle file:// tables of
// three files each through the daemon's path (Backend.Poll, Spec and Run
// under a scheduler) and reports, once every table has polled, the heap,
// goroutine stacks and RSS they keep per table over the process before the
// scheduler started. COMPACTORD_IDLE_HEAP_PROFILE=path writes a heap
// profile at that point.
func BenchmarkIdleTableMemory(b *testing.B) {
	if os.Getenv("COMPACTORD_IDLE_HEAP_PROFILE") != "" {
		// Every allocation sampled (not one per 512 KiB), so that the
		// profile names the small per-table objects.
		defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
		runtime.MemProfileRate = 64
	}
	for _, n := range idleSizes(b) {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			root := b.TempDir()
			pols := make([]policies.Policy, n)
			for i := range pols {
				dir := fmt.Sprintf("%s/t%05d", root, i)
				writeIdleTable(b, dir)
				pols[i] = policies.DefaultPolicy()
				pols[i].Name = fmt.Sprintf("t%05d", i)
				pols[i].URL = "file://" + dir
			}
			for range b.N {
				base := measure(b)
				be := &Backend{Tables: NewTables()}
				s := scheduler.New(scheduler.Config[policies.Policy]{Spec: be.Spec, Same: SamePolicy, Run: be.Run, Poll: be.Poll,
					Workers: 2, PollInterval: time.Hour})
				s.Apply(pols)
				for {
					polled := 0
					for _, st := range s.Status() {
						if st.Counters.Polls > 0 {
							polled++
						}
					}
					if polled == n {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				after := measure(b)
				if path := os.Getenv("COMPACTORD_IDLE_HEAP_PROFILE"); path != "" {
					f, err := os.Create(fmt.Sprintf("%s.%d", path, n))
					if err != nil {
						b.Fatal(err)
					}
					if err := pprof.WriteHeapProfile(f); err != nil {
						b.Fatal(err)
					}
					f.Close()
				}
				per := func(a, z uint64) float64 { return (float64(z) - float64(a)) / float64(n) / 1024 }
				b.ReportMetric(per(base.heap, after.heap), "heap-KiB/table")
				b.ReportMetric(per(base.stack, after.stack), "stack-KiB/table")
				b.ReportMetric(per(base.rss, after.rss), "rss-KiB/table")
				b.ReportMetric(float64(after.goroutines-base.goroutines)/float64(n), "goroutines/table")
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				_ = s.Shutdown(ctx)
				cancel()
				_ = be.Tables.Close()
			}
		})
	}
}

// idleSizes are the fleet sizes of BenchmarkIdleTableMemory:
// COMPACTORD_IDLE_TABLES (comma-separated) or 2,000 and 10,000.
func idleSizes(b *testing.B) []int {
	env := os.Getenv("COMPACTORD_IDLE_TABLES")
	if env == "" {
		return []int{2000, 10000}
	}
	var out []int
	for _, f := range strings.Split(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("COMPACTORD_IDLE_TABLES: %q is not a table count", f)
		}
		out = append(out, n)
	}
	return out
}
