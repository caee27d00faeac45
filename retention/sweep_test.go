package retention

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/compactord/compactord/internal/attemptsweep"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

// A retention-only run cleans up after a killed retention attempt, as a
// compaction run does: the killed attempt's intent record, unmodified for
// longer than the staleness window, is dead, and the run's start deletes
// the uncommitted copy-on-write output it names (a real parquet file no
// commit references) with its upload temp file, keeps the live file it
// also names, deletes the record and counts both. A record within the
// window (a live attempt) is left alone with what it names, and a dry run
// deletes nothing.
func TestExpireSweepsTheDeadAttemptsOfKilledRuns(t *testing.T) {
	cases := []struct {
		name       string
		age        time.Duration // since the killed attempt last wrote its record
		staleAfter time.Duration // Options.AttemptStaleAfter (0: the default 1h)
		dryRun     bool
		swept      bool
	}{
		{name: "unmodified for two hours: dead", age: 2 * time.Hour, swept: true},
		{name: "heartbeated a minute ago: live", age: time.Minute},
		{name: "ten minutes old within the default window: live", age: 10 * time.Minute},
		{name: "ten minutes old past a 5m window: dead", age: 10 * time.Minute, staleAfter: 5 * time.Minute, swept: true},
		{name: "dry run: nothing swept", age: 2 * time.Hour, dryRun: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tbl := tabletest.NewTable(t, "file://"+filepath.ToSlash(dir), tabletest.IDRange(0, 10), tabletest.IDRange(10, 10))
			live, err := tabletest.Latest(t, tbl).Files[0].Key()
			if err != nil {
				t.Fatal(err)
			}
			orphan, err := tabletest.WriteDataFile(t, tbl, tabletest.IDRange(100, 5)).Key()
			if err != nil {
				t.Fatal(err)
			}
			temp := orphan + ".18a2b3c4d5e6f.tmp"
			if err := tbl.Bucket.WriteAll(context.Background(), temp, []byte("half an upload"), nil); err != nil {
				t.Fatal(err)
			}
			record := tabletest.KilledAttempt(t, tbl, "retention", orphan, live)
			last := time.Now().Add(-tc.age)
			if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(record)), last, last); err != nil {
				t.Fatal(err)
			}

			// Through the operation, as the daemon runs it: its report
			// counts what the start swept.
			op := &Op{Options: Options{Column: "id", EpochUnit: "days", Before: "5",
				DryRun: tc.dryRun, AttemptStaleAfter: tc.staleAfter, Logger: tabletest.Logger(t)}}
			res, err := op.Run(context.Background(), tbl)
			if err != nil {
				t.Fatal(err)
			}
			wantAttempts, wantObjects := int64(0), int64(0)
			if tc.swept {
				wantAttempts, wantObjects = 1, 2
			}
			if got, gotObjects := res.Counts[attemptsweep.CountAttempts], res.Counts[attemptsweep.CountObjects]; got != wantAttempts || gotObjects != wantObjects {
				t.Errorf("swept %d attempts and %d objects, want %d and %d", got, gotObjects, wantAttempts, wantObjects)
			}
			after := tabletest.StoreObjects(t, tbl)
			for _, k := range []string{orphan, temp, record} {
				if after[k] == tc.swept {
					t.Errorf("%s exists %v after the run, want %v", k, after[k], !tc.swept)
				}
			}
			if !after[live] {
				t.Errorf("live file %s, named by the record, was deleted", live)
			}
			want := tabletest.IDSet(tabletest.IDRange(5, 15))
			if tc.dryRun {
				want = tabletest.IDSet(tabletest.IDRange(0, 20))
			}
			tabletest.WantIDs(t, tbl, want)
		})
	}
}
