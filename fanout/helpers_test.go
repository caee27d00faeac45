package fanout

import (
	"fmt"
	"testing"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/planner"
)

// planned builds a table of files files of rows ids each and a binpack
// plan of its version 0 with one job per two files (in log order).
func planned(t *testing.T, files int, rows int64) (*delta.Table, *planner.CompactionPlan, *delta.Snapshot) {
	t.Helper()
	tbl := tabletest.NewTable(t, "file://"+t.TempDir(), tabletest.Batches(files, rows)...)
	snap := tabletest.Latest(t, tbl)
	pl := &planner.CompactionPlan{ReadVersion: snap.Version, Strategy: planner.StrategyBinpack}
	for i := 0; i+1 < len(snap.Files); i += 2 {
		pl.Jobs = append(pl.Jobs, &planner.Job{ID: fmt.Sprintf("pair-%d", i/2), Strategy: planner.StrategyBinpack,
			SourcePaths: []string{snap.Files[i].Path, snap.Files[i+1].Path}, SourceBytes: snap.Files[i].Size + snap.Files[i+1].Size})
	}
	return tbl, pl, snap
}
