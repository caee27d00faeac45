package compaction

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/planner"
)

// rtFiles returns n files of 20 ids each from id lo, every other one with
// materialized columns, spread over partitions a and b.
func rtFiles(lo int64, n int) []tabletest.RowTrackingFile {
	var fs []tabletest.RowTrackingFile
	for k := range n {
		fs = append(fs, tabletest.RowTrackingFile{IDs: tabletest.IDRange(lo+int64(k)*20, 20), Part: []string{"a", "b"}[k%2], Materialized: k%2 == 1})
	}
	return fs
}

// rowTrackingTable is a table of two data commits (the second one's
// materialized rows preserve commit version 1) with DVs on two files.
func rowTrackingTable(t *testing.T, layout string) *delta.Table {
	tbl := tabletest.NewRowTrackingTable(t, tabletest.RowTrackingSpec{Layout: layout,
		Commits: [][]tabletest.RowTrackingFile{rtFiles(0, 4), rtFiles(80, 4)}})
	tabletest.DeleteIDs(t, tbl, 3, 4, 90, 91, 101)
	return tbl
}

func strategyOpts(s planner.Strategy) RunOptions {
	opts := binpackOpts()
	opts.Policy.Strategy = s
	if s == planner.StrategyZCube {
		opts = zcubeOpts()
	}
	return opts
}

func TestCompactionPreservesStableRowIDs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		layout   string
		strategy planner.Strategy
		// purge rewrites one file alone: most of its rows are deleted.
		purge bool
	}{
		{name: "binpack of an unpartitioned table", layout: tabletest.LayoutFlat, strategy: planner.StrategyBinpack},
		{name: "binpack per partition", layout: tabletest.LayoutPartitioned, strategy: planner.StrategyBinpack},
		{name: "lightweight on a clustered table", layout: tabletest.LayoutClustered, strategy: planner.StrategyLightweight},
		{name: "zcube permutes the rows", layout: tabletest.LayoutClustered, strategy: planner.StrategyZCube},
		{name: "purge of a file with most rows deleted", layout: tabletest.LayoutFlat, strategy: planner.StrategyBinpack, purge: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			tbl := rowTrackingTable(t, tc.layout)
			opts := strategyOpts(tc.strategy)
			if tc.purge {
				tabletest.DeleteIDs(t, tbl, tabletest.IDRange(82, 8)...) // with 90 and 91, 10 of file 80..99's 20 rows
				opts.Policy.TargetFileSize = 1                           // no file is small: only the purge is left
			}
			before, snap := tabletest.StableIDs(t, tbl)
			res, err := Compact(ctx, tbl, opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.CommittedVersion != snap.Version+1 || res.JobsCommitted == 0 {
				t.Fatalf("result %+v, want a commit at %d", res, snap.Version+1)
			}
			if tc.purge && res.FilesRemoved != res.JobsCommitted {
				t.Fatalf("purge removed %d files in %d jobs, want one file a job", res.FilesRemoved, res.JobsCommitted)
			}
			tabletest.WantStableIDs(t, tbl, before)
			tabletest.CheckRowTrackingCommit(t, tbl, res.CommittedVersion, snap, -1)
			// A second rewrite keeps them again (our own outputs are sources now).
			if tc.strategy == planner.StrategyBinpack && !tc.purge {
				tabletest.Append(t, tbl, "a", tabletest.IDRange(5000, 7))
				tabletest.DeleteIDs(t, tbl, 5001, 10, 11)
				before, snap := tabletest.StableIDs(t, tbl)
				res, err := Compact(ctx, tbl, opts)
				if err != nil || res.CommittedVersion < 0 {
					t.Fatalf("second compaction: %+v, %v", res, err)
				}
				tabletest.WantStableIDs(t, tbl, before)
				tabletest.CheckRowTrackingCommit(t, tbl, res.CommittedVersion, snap, -1)
			}
		})
	}
}

func TestRaceRowTrackingRebasesNewIDsAboveTheWinners(t *testing.T) {
	for _, tc := range []struct {
		name     string
		layout   string
		strategy planner.Strategy
	}{
		{name: "binpack", layout: tabletest.LayoutFlat, strategy: planner.StrategyBinpack},
		{name: "zcube through the origin map", layout: tabletest.LayoutClustered, strategy: planner.StrategyZCube},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			tbl := rowTrackingTable(t, tc.layout)
			opts := strategyOpts(tc.strategy)
			pl, snap, err := PlanTable(ctx, tbl, opts)
			if err != nil {
				t.Fatal(err)
			}
			before, _ := tabletest.StableIDs(t, tbl)
			var appended int64
			opts.Commit.BeforePut = tabletest.Once(func(int64) {
				tabletest.DeleteIDs(t, tbl, 0, 21, 85, 150)
				appended = tabletest.Append(t, tbl, "a", tabletest.IDRange(7000, 30))
			})
			res, err := RunPlan(ctx, tbl, pl, opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.CommittedVersion != snap.Version+3 || res.JobsDropped != 0 || len(res.Reconciled) == 0 {
				t.Fatalf("result %+v, want every job reconciled and committed at %d", res, snap.Version+3)
			}
			// The winners' rows: the DELETE's gone, the append's ids as it
			// committed them; the others as before.
			for _, id := range []int64{0, 21, 85, 150} {
				delete(before, id)
			}
			var winnerHWM int64
			for _, a := range tabletest.Committed(t, tbl, appended) {
				if a.Add != nil {
					for i, id := range tabletest.IDRange(7000, 30) {
						before[id] = tabletest.StableID{RowID: *a.Add.BaseRowID + int64(i), Version: appended}
					}
				}
				if a.DomainMetadata != nil {
					if winnerHWM, err = delta.ParseRowIDHighWaterMark(a.DomainMetadata.Configuration); err != nil {
						t.Fatal(err)
					}
				}
			}
			if winnerHWM == 0 {
				t.Fatalf("the append at version %d set no high-water mark", appended)
			}
			tabletest.WantStableIDs(t, tbl, before)
			// Our new files start above the winner's mark and carry the
			// version we finally committed at.
			tabletest.CheckRowTrackingCommit(t, tbl, res.CommittedVersion, snap, winnerHWM)
		})
	}
}

// TestDuckDBReadsTheMaterializedRowTrackingColumns compacts a row tracking
// table and reads every output with DuckDB: the materialized columns are
// there under their physical names and hold each row's stable row id and
// row commit version.
func TestDuckDBReadsTheMaterializedRowTrackingColumns(t *testing.T) {
	node, script := testutil.DuckScript(t, "rows.mjs")
	ctx := context.Background()
	tbl := rowTrackingTable(t, tabletest.LayoutFlat)
	before, snap := tabletest.StableIDs(t, tbl)
	res, err := Compact(ctx, tbl, binpackOpts())
	if err != nil || res.CommittedVersion != snap.Version+1 {
		t.Fatalf("compaction %+v, %v", res, err)
	}
	_, adds := checkCompactionCommit(t, tabletest.Committed(t, tbl, res.CommittedVersion))
	rows := 0
	for _, a := range adds {
		key, err := a.Key()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(strings.TrimPrefix(tbl.URL, "file://"), filepath.FromSlash(key))
		out, err := exec.Command(node, script, path).Output()
		if err != nil {
			t.Fatalf("duckdb over %s: %v", path, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var row map[string]any
			if err := json.Unmarshal([]byte(line), &row); err != nil {
				t.Fatalf("duckdb row %q: %v", line, err)
			}
			want := []string{"id", "v", tabletest.RowIDColumn, tabletest.RowCommitVersionColumn}
			if got := slices.Sorted(maps.Keys(row)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
				t.Fatalf("DuckDB sees columns %v, want %v", got, want)
			}
			id, _ := strconv.ParseInt(fmt.Sprint(row["id"]), 10, 64)
			w, ok := before[id]
			if !ok || fmt.Sprint(row[tabletest.RowIDColumn]) != strconv.FormatInt(w.RowID, 10) || fmt.Sprint(row[tabletest.RowCommitVersionColumn]) != strconv.FormatInt(w.Version, 10) {
				t.Errorf("DuckDB row %v, want id %d with row id %d and commit version %d", row, id, w.RowID, w.Version)
			}
			rows++
		}
	}
	if rows != len(before) {
		t.Fatalf("DuckDB read %d rows, want %d", rows, len(before))
	}
}

// With delta.rowTrackingSuspended the rewrite assigns no row ids and
// writes no high-water mark (PROTOCOL.md: writers should not assign
// baseRowId or defaultRowCommitVersion while suspended).
func TestSuspendedRowTrackingAssignsNothing(t *testing.T) {
	tbl := tabletest.NewRowTrackingTable(t, tabletest.RowTrackingSpec{Layout: tabletest.LayoutFlat, Suspended: true,
		Commits: [][]tabletest.RowTrackingFile{{{IDs: tabletest.IDRange(0, 10)}, {IDs: tabletest.IDRange(10, 10)}}}})
	res, err := Compact(context.Background(), tbl, binpackOpts())
	if err != nil || res.CommittedVersion < 0 {
		t.Fatalf("compaction %+v, %v", res, err)
	}
	acts := tabletest.Committed(t, tbl, res.CommittedVersion)
	if _, set, err := delta.RowTrackingHighWaterMark(acts); set || err != nil {
		t.Errorf("a suspended table's commit sets the high-water mark (%v)", err)
	}
	_, adds := checkCompactionCommit(t, acts)
	for _, a := range adds {
		if a.BaseRowID != nil || a.DefaultRowCommitVersion != nil {
			t.Errorf("add %s has row tracking fields while suspended", a.Path)
		}
	}
	tabletest.WantIDs(t, tbl, tabletest.IDSet(tabletest.IDRange(0, 20)))
}
