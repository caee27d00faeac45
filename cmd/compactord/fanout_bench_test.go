package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/fanout"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/planner"
)

// BenchmarkFanout runs a plan of 8 units (2 files of 200k rows, each with
// a deletion vector, per unit) as `compactord run-unit` processes through
// the ProcessLauncher with 1 and with 2 workers at once, committing at the
// end; each iteration compacts a fresh copy of the table. bench/README.md
// has the numbers and the speed-up.
func BenchmarkFanout(b *testing.B) {
	bin := buildBinary(b)
	src := b.TempDir()
	tbl := tabletest.NewTable(b, "file://"+src, tabletest.Batches(16, 200_000)...)
	snap := tabletest.Latest(b, tbl)
	var del []int64
	for i := range snap.Files {
		del = append(del, int64(i)*200_000+7)
	}
	tabletest.DeleteIDs(b, tbl, del...)
	snap = tabletest.Latest(b, tbl)
	pl := &planner.CompactionPlan{ReadVersion: snap.Version, Strategy: planner.StrategyBinpack}
	for i := 0; i < len(snap.Files); i += 2 {
		pl.Jobs = append(pl.Jobs, &planner.Job{ID: fmt.Sprintf("pair-%d", i/2), Strategy: planner.StrategyBinpack,
			SourcePaths: []string{snap.Files[i].Path, snap.Files[i+1].Path}})
	}
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dir := filepath.Join(b.TempDir(), "t")
				if out, err := exec.Command("cp", "-a", src, dir).CombinedOutput(); err != nil {
					b.Fatalf("copy table: %v %s", err, out)
				}
				t, err := delta.OpenTable(context.Background(), "file://"+dir)
				if err != nil {
					b.Fatal(err)
				}
				opts := runOptions(nil)
				opts.Executor = &fanout.Executor{Launcher: &fanout.ProcessLauncher{Binary: bin}, Parallelism: workers}
				b.StartTimer()
				res, err := compaction.RunPlan(context.Background(), t, pl, opts)
				b.StopTimer()
				if err != nil || res.JobsCommitted != 8 {
					b.Fatalf("run: %v (%+v)", err, res)
				}
				t.Close()
				_ = os.RemoveAll(dir)
				b.StartTimer()
			}
		})
	}
}
