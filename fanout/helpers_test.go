package fanout

import (
	"context"
	"testing"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/tabletest"
	"github.com/compactord/compactord/planner"
)

// planned builds a table of files files of rows ids each and plans it with
// a target so small that every two files make one job.
func planned(t *testing.T, files int, rows int64) (*delta.Table, *planner.CompactionPlan, *delta.Snapshot) {
	t.Helper()
	tbl := tabletest.NewTable(t, "file://"+t.TempDir(), tabletest.Batches(files, rows)...)
	snap := tabletest.Latest(t, tbl)
	pol := planner.DefaultPolicy()
	pol.SettleWindow = 0
	pol.TargetFileSize = 2*snap.Files[0].Size + 1
	pol.MinFileSize = pol.TargetFileSize
	pl, snap, err := compaction.PlanTable(context.Background(), tbl, compaction.RunOptions{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	return tbl, pl, snap
}

func TestPlannedHelperMakesOneJobPerTwoFiles(t *testing.T) {
	_, pl, _ := planned(t, 8, 10)
	if len(pl.Jobs) != 4 {
		t.Fatalf("%d jobs, want 4: %+v", len(pl.Jobs), pl.Skipped)
	}
}
