package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/compactord/compactord/internal/testutil/tabletest"

	"github.com/compactord/compactord/internal/testutil/stores"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/planner"
)

// compactionTable is the Spark-written table the compaction tests rewrite:
// 15 small files in 8 partitions, deletion vectors enabled and in use, a
// classic checkpoint.
const compactionTable = "dv-partitioned-with-checkpoint"

func runOptions() compaction.RunOptions {
	p := planner.DefaultPolicy()
	p.Strategy = planner.StrategyBinpack
	p.SettleWindow = 0
	return compaction.RunOptions{Policy: p, EngineInfo: "compactord/storetest"}
}

// Compaction compacts the table on the store and checks that the live rows
// are exactly the same multiset and that fewer files hold them.
func Compaction(t *testing.T, url string) {
	ctx := context.Background()
	tbl := stores.Open(t, url)
	stores.CopyTable(t, testutil.DeltaTable(t, compactionTable), tbl)
	before, rowsBefore := stores.LiveRows(t, tbl)
	res, err := compaction.Compact(ctx, tbl, runOptions())
	if err != nil {
		t.Fatalf("compact %s: %v", url, err)
	}
	if res.CommittedVersion != before.Version+1 || res.FilesRemoved == 0 {
		t.Fatalf("compact %s: committed v%d removing %d files; want v%d removing some", url, res.CommittedVersion, res.FilesRemoved, before.Version+1)
	}
	after, rowsAfter := stores.LiveRows(t, tbl)
	if lost, extra := rowsAfter.Diff(rowsBefore); len(lost)+len(extra) > 0 {
		t.Fatalf("compaction changed the rows: lost %d %v, resurrected/extra %d %v", len(lost), lost, len(extra), extra)
	}
	if len(after.Files) >= len(before.Files) {
		t.Fatalf("compaction left %d files (had %d)", len(after.Files), len(before.Files))
	}
	t.Logf("v%d -> v%d: %d files -> %d, %d rows kept", before.Version, after.Version, len(before.Files), len(after.Files), rowsAfter.Total())
}

// ReconcileRace plans a compaction, lets a deletion-vector DELETE commit
// first (right before the compaction's put-if-absent, so the race is
// deterministic), and checks that the compaction reconciles and commits
// after it, with the deleted rows gone and every other row kept.
func ReconcileRace(t *testing.T, url string) {
	ctx := context.Background()
	tbl := stores.Open(t, url)
	stores.CopyTable(t, testutil.DeltaTable(t, compactionTable), tbl)
	before, rowsBefore := stores.LiveRows(t, tbl)
	opts := runOptions()
	pl, _, err := compaction.PlanTable(ctx, tbl, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Jobs) == 0 || len(pl.Jobs[0].Sources) == 0 {
		t.Fatalf("planner found nothing to compact in %s", url)
	}
	victim := pl.Jobs[0].Sources[0].Path

	deleted := stores.Rows{}
	deleteVersion := int64(-1)
	opts.Commit.BeforePut = func(ctx context.Context, version int64) error {
		if deleteVersion >= 0 {
			return nil
		}
		snap, err := delta.LoadSnapshot(ctx, tbl, -1)
		if err != nil {
			return err
		}
		var f *actions.Add
		for _, a := range snap.Files {
			if a.Path == victim {
				f = a
			}
		}
		if f == nil {
			return errors.New("victim file not live")
		}
		var idx []int64
		rows := stores.FileRows(t, tbl, snap, f, &idx)
		// Delete the first and last live rows of the source.
		pick := []int{0}
		if len(rows) > 1 {
			pick = append(pick, len(rows)-1)
		}
		var phys []int64
		for _, i := range pick {
			deleted[rows[i]]++
			phys = append(phys, idx[i])
		}
		res, err := tabletest.DeleteRows(ctx, tbl, snap, map[string][]int64{victim: phys}, tabletest.DeleteOptions{})
		if err != nil {
			return err
		}
		deleteVersion = res.Version
		return nil
	}
	res, err := compaction.RunPlan(ctx, tbl, pl, opts)
	if err != nil {
		t.Fatalf("run plan on %s: %v", url, err)
	}
	if deleteVersion != before.Version+1 || res.CommittedVersion != before.Version+2 {
		t.Fatalf("delete committed v%d, compaction v%d; want v%d then v%d", deleteVersion, res.CommittedVersion, before.Version+1, before.Version+2)
	}
	if len(res.Reconciled) == 0 {
		t.Fatalf("compaction did not reconcile the delete on %s (dropped: %+v)", victim, res.Dropped)
	}
	want := stores.Rows{}
	for k, c := range rowsBefore {
		if c -= deleted[k]; c > 0 {
			want[k] = c
		}
	}
	_, rowsAfter := stores.LiveRows(t, tbl)
	if lost, extra := rowsAfter.Diff(want); len(lost)+len(extra) > 0 {
		t.Fatalf("after delete + compaction: lost %d %v, resurrected/extra %d %v", len(lost), lost, len(extra), extra)
	}
	t.Logf("DELETE v%d of %d rows, OPTIMIZE v%d reconciled %d source(s); %d rows live, 0 lost, 0 resurrected",
		deleteVersion, deleted.Total(), res.CommittedVersion, len(res.Reconciled), rowsAfter.Total())
}

// errCrash stands for the process dying between writing outputs and
// committing them.
var errCrash = errors.New("storetest: simulated crash before commit")

// CrashAbandon fails a compaction right before its put-if-absent and checks
// that the table version and rows are untouched and that the attempt's
// output files were deleted.
func CrashAbandon(t *testing.T, url string) {
	ctx := context.Background()
	tbl := stores.Open(t, url)
	stores.CopyTable(t, testutil.DeltaTable(t, compactionTable), tbl)
	before, rowsBefore := stores.LiveRows(t, tbl)
	objectsBefore := stores.DataObjects(t, tbl)
	opts := runOptions()
	puts := 0
	opts.Commit.BeforePut = func(context.Context, int64) error {
		puts++
		return errCrash
	}
	_, err := compaction.Compact(ctx, tbl, opts)
	if !errors.Is(err, errCrash) {
		t.Fatalf("compact with a crash before commit: err = %v, want the crash", err)
	}
	if puts == 0 {
		t.Fatal("the crash hook never ran: nothing was about to be committed")
	}
	after, rowsAfter := stores.LiveRows(t, tbl)
	if after.Version != before.Version {
		t.Fatalf("abandoned compaction moved %s from v%d to v%d", url, before.Version, after.Version)
	}
	if lost, extra := rowsAfter.Diff(rowsBefore); len(lost)+len(extra) > 0 {
		t.Fatalf("abandoned compaction changed rows: lost %v, extra %v", lost, extra)
	}
	objectsAfter := stores.DataObjects(t, tbl)
	if len(objectsAfter) != len(objectsBefore) {
		t.Fatalf("abandoned compaction left %d orphan objects: before %v, after %v", len(objectsAfter)-len(objectsBefore), objectsBefore, objectsAfter)
	}
}
