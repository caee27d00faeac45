package attemptsweep_test

import (
	"context"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/dv"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/attemptsweep"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

// A dead attempt's record (not rewritten within the staleness window) is
// swept: its unreferenced objects and their upload temp files go, the keys
// a commit references (a live add, its DV file, a tombstone) stay, a key
// never written is fine, and the record goes. A live record is left alone
// with everything it names.
func TestSweep(t *testing.T) {
	ages := map[string]time.Duration{ // since the record was last written
		"heartbeated a minute ago: live": time.Minute,
		"just under the window: live":    59 * time.Minute,
		"unmodified for two hours: dead": 2 * time.Hour,
	}
	for name, age := range ages {
		tc := struct {
			name  string
			age   time.Duration
			swept bool
		}{name, age, age > attempt.DefaultStaleAfter}
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			tbl := tabletest.NewTable(t, "file://"+t.TempDir(), tabletest.IDRange(0, 10), tabletest.IDRange(10, 10))
			tabletest.DeleteIDs(t, tbl, 1)  // file 0: a DV (live add with a DV file), a tombstone
			tabletest.CowDelete(t, tbl, 15) // file 1: a tombstone, a new live file
			snap := tabletest.Latest(t, tbl)
			var referenced []string
			for _, f := range snap.Files {
				k, err := f.Key()
				if err != nil {
					t.Fatal(err)
				}
				referenced = append(referenced, k)
				if f.DeletionVector != nil {
					dk, err := dv.DVFileKey(f.DeletionVector.PathOrInlineDv)
					if err != nil {
						t.Fatal(err)
					}
					referenced = append(referenced, dk)
				}
			}
			for _, r := range snap.Tombstones {
				k, err := actions.DecodePath(r.Path)
				if err != nil {
					t.Fatal(err)
				}
				referenced = append(referenced, k)
			}
			if len(referenced) < 4 {
				t.Fatalf("want live adds, a DV file and tombstones referenced, got %v", referenced)
			}
			orphan := "part-00000-killed.c000.zstd.parquet"
			temp := orphan + ".18a2b3c4d5e6f.tmp"
			for _, k := range []string{orphan, temp} {
				if err := tbl.Bucket.WriteAll(ctx, k, []byte("uncommitted"), nil); err != nil {
					t.Fatal(err)
				}
			}
			logKey := logpath.LogDir + "00000000000000000001.json"
			record := tabletest.KilledAttempt(t, tbl, "compaction", append(append([]string{orphan, "part-never-written.parquet"}, referenced...), logKey)...)
			// The sweep runs tc.age after the record's last write.
			now := func() time.Time { return time.Now().Add(tc.age) }
			res, err := attemptsweep.Sweep(ctx, tbl, attemptsweep.Options{Now: now, Logger: tabletest.Logger(t), Snapshots: delta.LoadSnapshot})
			if err != nil {
				t.Fatal(err)
			}
			after := tabletest.StoreObjects(t, tbl)
			wantRecords, wantObjects := int64(0), int64(0)
			if tc.swept {
				wantRecords, wantObjects = 1, 2
			}
			if res.Records != wantRecords || res.Objects != wantObjects {
				t.Errorf("swept %d records and %d objects, want %d and %d", res.Records, res.Objects, wantRecords, wantObjects)
			}
			for _, k := range []string{orphan, temp, record} {
				if after[k] == tc.swept {
					t.Errorf("%s exists %v after the sweep, want %v", k, after[k], !tc.swept)
				}
			}
			for _, k := range referenced {
				if !after[k] {
					t.Errorf("referenced object %s was deleted", k)
				}
			}
			if ok, err := tbl.Bucket.Exists(ctx, logKey); err != nil || !ok {
				t.Errorf("commit %s exists %v (%v) after the sweep", logKey, ok, err)
			}
			tabletest.WantIDs(t, tbl, tabletest.IDSet(tabletest.IDRange(0, 1), tabletest.IDRange(2, 13), tabletest.IDRange(16, 4)))
		})
	}
}
