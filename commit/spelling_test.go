package commit

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
)

// A winner that removes a file the transaction depends on, spelling its
// path otherwise than the read snapshot (absolute, or encoded otherwise),
// is a conflict for every kind of transaction, as Spark matches paths
// after qualifying them: a raw string match would miss it, and a
// compaction would write the removed rows back.
func TestAWinnerSpellingAReadFileOtherwiseStillConflicts(t *testing.T) {
	ctx := context.Background()
	tbl := &delta.Table{URL: "s3://bucket/warehouse/t"}
	spellings := []string{"s3://bucket/warehouse/t/a.parquet", "s3a://bucket/warehouse/t/a%2Eparquet", "./a.parquet", "/warehouse/t/a.parquet"}
	for _, spelled := range spellings {
		winner := func(a *actions.Add) []actions.Action {
			rm := removeWithTimestamp(a, 1, true)
			rm.Path = spelled
			return []actions.Action{{Remove: rm}}
		}

		// Compaction: the job whose source the winner removed is dropped.
		d := newMemDVs()
		a, b := file("a.parquet", 10, nil), file("b.parquet", 10, nil)
		c, err := newCompaction(tbl.FileKeys(), dvSnap(a, b), []*CompactionJob{binpack("j", "out.parquet", a, b)}, d, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.observe(ctx, 6, winner(a)); err != nil {
			t.Fatal(err)
		}
		if c.jobs[0].dropped == nil || c.conflicts[KindCopyOnWrite] != 1 {
			t.Errorf("compaction, winner removes %q: job dropped=%v conflicts %v, want dropped as copy-on-write", spelled, c.jobs[0].dropped, c.conflicts)
		}

		// A data-changing transaction deleting rows of the file conflicts.
		ra := rangeFile("a.parquet", 10, 0, 9, nil)
		m := newDML(t, d, Serializable, &FileChange{Read: ra, Deleted: roaring64.BitmapOf(2)})
		m.Txn.Table = tbl
		if err := m.init(); err != nil {
			t.Fatal(err)
		}
		if err := m.observe(ctx, 6, winner(ra)); !errors.Is(err, ErrConflict) {
			t.Errorf("DML, winner removes %q: got %v, want a conflict", spelled, err)
		}
		// ... and so does one that only read it, when the winner rewrites it
		// into the transaction's range.
		m2 := newDML(t, d, WriteSerializable, &FileChange{Read: rangeFile("c.parquet", 10, 0, 9, nil), Deleted: roaring64.BitmapOf(2)})
		m2.Txn.Table = tbl
		m2.ReadOnly = map[string]bool{"a.parquet": true}
		rewrite := append(winner(ra), actions.Action{Add: rangeFile("a2.parquet", 9, 7, 60, nil)})
		if err := m2.observe(ctx, 6, rewrite); !errors.Is(err, ErrConflict) {
			t.Errorf("DML reading the file, winner rewrites %q into its range: got %v, want a conflict", spelled, err)
		}
	}

	// A plain transaction that read the file conflicts (mem:// root).
	mem := memTable(t, 1)
	putRaw(t, mem, 2, `{"commitInfo":{"operation":"DELETE","txnId":"w"}}`,
		fmt.Sprintf(`{"remove":{"path":%q,"dataChange":true}}`, mem.URL+"/a%2Eparquet"))
	tx := testTxn(mem, 1, Options{})
	tx.ReadFiles = map[string]bool{"a.parquet": true}
	tx.Actions = []actions.Action{}
	if _, err := tx.Commit(ctx); !errors.Is(err, ErrConflict) {
		t.Errorf("plain transaction, winner removes %s/a%%2Eparquet: got %v, want ErrConflict", mem.URL, err)
	}
}
