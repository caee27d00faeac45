package statsbackfill

import (
	"context"
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/stats"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/testutil/stores"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/planner"
	"github.com/compactord/compactord/writer"
)

// dataHashes hashes every file of a local table outside _delta_log/.
func dataHashes(t *testing.T, tbl *delta.Table) map[string][32]byte {
	t.Helper()
	dir := strings.TrimPrefix(tbl.URL, "file://")
	out := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "_delta_log" {
				return filepath.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[p] = sha256.Sum256(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// writerStats rewrites one file's rows through the writer (the compaction
// path) and returns the statistics the writer computed for its output.
func writerStats(t *testing.T, tbl *delta.Table, snap *delta.Snapshot, f *actions.Add) string {
	t.Helper()
	ctx := context.Background()
	objs := &attempt.Objects{} // the check owns its attempt: nothing it writes is kept
	defer func() { _, _ = objs.Clean(ctx, tbl.Bucket) }()
	res, err := writer.RewriteAll(ctx, tbl, snap, []*writer.Job{{ID: "check", Sources: []*actions.Add{f}}}, objs, writer.Options{})
	if err != nil {
		t.Fatalf("rewrite %s: %v", f.Path, err)
	}
	if len(res) != 1 || len(res[0].Outputs) != 1 {
		t.Fatalf("rewrite of %s: %d results", f.Path, len(res))
	}
	return res[0].Outputs[0].Add.Stats
}

// TestBackfillOnOtherEnginesTablesWithoutStats runs the backfill on tables
// written without statistics (delta-rs: partition values with escaped
// characters, a mix with and without stats, 36 tiny merge/update/delete
// files; Spark: all partition types; struct-only stats in a checkpoint):
// every file gets the statistics the writer computes for the same rows,
// the rows and the data files are unchanged, and a second run finds
// nothing to do.
func TestBackfillOnOtherEnginesTablesWithoutStats(t *testing.T) {
	for _, name := range []string{"part-special-chars", "stats-optional", "small-files-merge-update-delete", "part-values-all-types", "stats-struct-only-delta121"} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			tbl := tabletest.CopyFixture(t, name)
			_, before := stores.LiveRows(t, tbl)
			hashes := dataHashes(t, tbl)
			res, err := Run(ctx, tbl, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Candidates == 0 || res.Backfilled != res.Candidates || res.CommittedVersion < 0 {
				t.Fatalf("result %+v", res)
			}
			snap, after := stores.LiveRows(t, tbl)
			if lost, extra := after.Diff(before); len(lost)+len(extra) > 0 {
				t.Fatalf("rows changed: lost %v, extra %v", lost, extra)
			}
			for p, h := range dataHashes(t, tbl) {
				if hashes[p] != h {
					t.Errorf("%s changed", p)
				}
			}
			need, err := Expected(snap)
			if err != nil {
				t.Fatal(err)
			}
			acts, err := delta.ReadCommit(ctx, tbl, res.CommittedVersion)
			if err != nil {
				t.Fatal(err)
			}
			readded := map[string]bool{}
			for _, a := range acts {
				if a.Remove != nil || (a.Add != nil && a.Add.DataChange) {
					t.Fatalf("COMPUTE STATS commit has %+v", a)
				}
				if a.Add != nil {
					readded[a.Add.Path] = true
				}
			}
			for _, f := range snap.Files {
				if Missing(f, need) != MissingNone {
					t.Errorf("%s still lacks statistics: %q", f.Path, f.Stats)
				}
				if !readded[f.Path] || f.DeletionVector != nil {
					continue
				}
				if n, _, _ := f.NumRecords(); n == 0 {
					// The writer writes no file for no rows.
					if !strings.Contains(f.Stats, `"numRecords":0`) {
						t.Errorf("%s: stats %s", f.Path, f.Stats)
					}
					continue
				}
				if w := writerStats(t, tbl, snap, f); w != f.Stats {
					t.Errorf("%s: backfilled stats\n%s\nthe writer computes\n%s", f.Path, f.Stats, w)
				}
			}
			again, err := Run(ctx, tbl, Options{})
			if err != nil || again.Candidates != 0 || again.CommittedVersion != -1 {
				t.Fatalf("second run %+v, %v", again, err)
			}
		})
	}
}

// TestBackfilledStatsSteerTheNextCompaction: a file without stats that has
// a one-row deletion vector looks like a purge candidate to the planner
// (its deleted-row ratio is unknown); once backfilled (physical rows,
// tightBounds=false), the ratio is known (1/200) and the planner leaves it
// alone. A file whose stats name fewer columns than the table indexes is
// backfilled too.
func TestBackfilledStatsSteerTheNextCompaction(t *testing.T) {
	ctx := context.Background()
	tbl := tabletest.NewTable(t, "file://"+t.TempDir())
	big := tabletest.WriteDataFile(t, tbl, tabletest.IDRange(0, 200))
	big.Stats = ""
	partial := tabletest.WriteDataFile(t, tbl, tabletest.IDRange(1000, 10))
	partial.Stats = `{"numRecords":10,"minValues":{"id":1000},"maxValues":{"id":1009},"nullCount":{"id":0}}`
	snap := tabletest.Latest(t, tbl)
	tx := &commit.Txn{Table: tbl, Snapshot: snap, Operation: "WRITE", Actions: []actions.Action{{Add: big}, {Add: partial}}}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tabletest.DeleteIDs(t, tbl, 7)
	pol := planner.DefaultPolicy()
	pol.Strategy = planner.StrategyBinpack
	pol.SettleWindow = 0
	pol.MinFileSize = 64 // both files are "large": only a purge would rewrite them
	plan := func() *planner.CompactionPlan {
		pl, err := planner.Plan(tabletest.Latest(t, tbl), pol)
		if err != nil {
			t.Fatal(err)
		}
		return pl
	}
	if pl := plan(); len(pl.Jobs) != 1 {
		t.Fatalf("before the backfill: %d jobs, want the purge of the file without stats", len(pl.Jobs))
	}
	res, err := Run(ctx, tbl, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.NoStats != 1 || res.Partial != 1 || res.Backfilled != 2 || res.Rows != 210 {
		t.Fatalf("result %+v", res)
	}
	for _, f := range tabletest.Latest(t, tbl).Files {
		st, err := stats.ParseStats(f.Stats)
		if err != nil {
			t.Fatal(err)
		}
		if f.DeletionVector != nil && (st.Tight() || *st.NumRecords != 200) {
			t.Errorf("file with a DV: stats %s, want 200 physical rows and tightBounds=false", f.Stats)
		}
		if _, ok := st.NullCount["v"]; !ok {
			t.Errorf("%s: no null count of v: %s", f.Path, f.Stats)
		}
	}
	if pl := plan(); len(pl.Jobs) != 0 {
		t.Fatalf("after the backfill: %d jobs, want none (1 of 200 rows deleted is below the purge ratio)", len(pl.Jobs))
	}
	tabletest.WantIDs(t, tbl, tabletest.IDSet(tabletest.IDRange(0, 7), tabletest.IDRange(8, 192), tabletest.IDRange(1000, 10)))
}
