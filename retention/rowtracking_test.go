package retention

import (
	"context"
	"testing"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

// expiryCase is a row tracking table layout and how expiry deletes in it.
type expiryCase struct {
	name   string
	layout string
	cow    bool // copy-on-write: deletion vectors disabled
}

func TestExpireKeepsTheStableRowIDsOfSurvivors(t *testing.T) {
	for _, tc := range []expiryCase{
		{name: "deletion vectors", layout: tabletest.LayoutFlat},
		{name: "deletion vectors, partitioned", layout: tabletest.LayoutPartitioned},
		{name: "copy-on-write", layout: tabletest.LayoutFlat, cow: true},
		{name: "copy-on-write, clustered", layout: tabletest.LayoutClustered, cow: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := func(lo int64) []tabletest.RowTrackingFile {
				var fs []tabletest.RowTrackingFile
				for k := range 4 {
					fs = append(fs, tabletest.RowTrackingFile{IDs: tabletest.IDRange(lo+int64(k)*20, 20), Part: []string{"a", "b"}[k%2], Materialized: k%2 == 0})
				}
				return fs
			}
			tbl := tabletest.NewRowTrackingTable(t, tabletest.RowTrackingSpec{Layout: tc.layout, Commits: [][]tabletest.RowTrackingFile{files(0), files(80)}})
			tabletest.DeleteIDs(t, tbl, 1, 30, 31) // read-time DVs
			if tc.cow {
				tabletest.DisableDVs(t, tbl)
			}
			before, snap := tabletest.StableIDs(t, tbl)
			hwm := tabletest.HighWaterMark(t, tbl)
			// Ids are days: expire 0..49 (two files whole, one in part).
			res := expireBefore(t, tbl, 50, commit.Options{})
			if res.CommittedVersion != snap.Version+1 || (tc.cow && res.FilesAdded == 0) || (!tc.cow && res.FilesWithNewDV == 0) {
				t.Fatalf("result %+v", res)
			}
			for id := range before {
				if id < 50 {
					delete(before, id)
				}
			}
			tabletest.WantStableIDs(t, tbl, before)
			tabletest.CheckRowTrackingCommit(t, tbl, res.CommittedVersion, snap, -1)
			if after := tabletest.HighWaterMark(t, tbl); after < hwm {
				t.Fatalf("high-water mark went down from %d to %d", hwm, after)
			}
		})
	}
}

// A retention DV delete that loses its race to a compaction of its files
// reverse-remaps its deletions onto the compaction's outputs; the
// survivors keep their stable ids through both.
func TestExpireReverseRemapKeepsStableRowIDs(t *testing.T) {
	var files []tabletest.RowTrackingFile
	for k := range 4 {
		files = append(files, tabletest.RowTrackingFile{IDs: tabletest.IDRange(int64(k)*10, 10), Materialized: k%2 == 1})
	}
	tbl := tabletest.NewRowTrackingTable(t, tabletest.RowTrackingSpec{Layout: tabletest.LayoutFlat, Commits: [][]tabletest.RowTrackingFile{files}})
	before, _ := tabletest.StableIDs(t, tbl)
	co := commit.Options{BeforePut: tabletest.Once(func(int64) {
		if _, err := compaction.Compact(context.Background(), tbl, compactOpts()); err != nil {
			t.Fatal(err)
		}
	})}
	res := expireBefore(t, tbl, 15, co)
	if res.Conflicts[commit.KindReverseRemapped] == 0 || res.RowsDeleted != 15 {
		t.Fatalf("result %+v: want 15 rows deleted through reverse remaps", res)
	}
	for id := range before {
		if id < 15 {
			delete(before, id)
		}
	}
	tabletest.WantStableIDs(t, tbl, before)
}
