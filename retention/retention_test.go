package retention

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/planner"
)

func fileURL(t testing.TB) string { return "file://" + filepath.ToSlash(t.TempDir()) }

func expireBefore(t testing.TB, tbl *delta.Table, before int64, co commit.Options) *Result {
	t.Helper()
	res, err := Expire(context.Background(), tbl, Options{Column: "id", EpochUnit: "days", Before: fmt.Sprint(before), Commit: co, Logger: tabletest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestExpireRemovesWholeFilesAndAddsDVs(t *testing.T) {
	tbl := tabletest.NewTable(t, fileURL(t), tabletest.IDRange(0, 10), tabletest.IDRange(10, 10), tabletest.IDRange(20, 10))
	res := expireBefore(t, tbl, 15, commit.Options{})
	if res.CommittedVersion != 1 || res.FilesRemoved != 1 || res.FilesWithNewDV != 1 || res.RowsDeleted != 15 || res.FilesScanned != 1 {
		t.Fatalf("result %+v: want v1, 1 file removed by stats, 1 new DV, 15 rows, 1 file scanned", res)
	}
	tabletest.WantIDs(t, tbl, tabletest.IDSet(tabletest.IDRange(15, 15)))
	acts := tabletest.Committed(t, tbl, 1)
	if string(acts[0].CommitInfo["operation"]) != `"DELETE"` || string(acts[0].CommitInfo["isolationLevel"]) != `"Serializable"` {
		t.Fatalf("commitInfo %s %s", acts[0].CommitInfo["operation"], acts[0].CommitInfo["isolationLevel"])
	}
	for _, a := range acts {
		if a.Add != nil && (!a.Add.DataChange || a.Add.DeletionVector == nil || !strings.Contains(a.Add.Stats, `"tightBounds":false`)) {
			t.Fatalf("DV add %+v: want dataChange, a DV and wide stats", a.Add)
		}
	}
	// Nothing left to expire: no commit.
	if again := expireBefore(t, tbl, 15, commit.Options{}); again.CommittedVersion != -1 {
		t.Fatalf("second run committed %d", again.CommittedVersion)
	}
}

func TestExpireCopyOnWriteWithoutDVs(t *testing.T) {
	tbl := tabletest.NewTable(t, fileURL(t), tabletest.IDRange(0, 10), tabletest.IDRange(10, 10))
	// Turn deletion vectors off (a metadata update at version 1).
	tabletest.DisableDVs(t, tbl)
	res := expireBefore(t, tbl, 5, commit.Options{})
	if res.FilesRemoved != 1 || res.FilesAdded != 1 || res.FilesWithNewDV != 0 || res.RowsDeleted != 5 {
		t.Fatalf("result %+v: want one copy-on-write rewrite of 5 rows", res)
	}
	tabletest.WantIDs(t, tbl, tabletest.IDSet(tabletest.IDRange(5, 15)))
	for _, f := range tabletest.Latest(t, tbl).Files {
		if f.DeletionVector != nil {
			t.Fatalf("file %s has a DV on a table without deletion vectors", f.Path)
		}
	}
}

func TestExpireColumnChecks(t *testing.T) {
	tbl := tabletest.NewTable(t, fileURL(t), tabletest.IDRange(0, 10))
	if _, err := Expire(context.Background(), tbl, Options{Column: "nope", Before: "1"}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("unknown column: got %v", err)
	}
	if _, err := Expire(context.Background(), tbl, Options{Column: "id", EpochUnit: "days", Before: "yesterday"}); err == nil {
		t.Fatal("a cutoff that does not parse as the column's type must be refused")
	}
}

// upsert is a MERGE-like writer on recent ids: it rewrites the file holding
// id copy-on-write and appends a new file of fresh recent ids.
func upsert(t testing.TB, tbl *delta.Table, id int64, fresh []int64) int64 {
	t.Helper()
	snap := tabletest.Latest(t, tbl)
	f, _ := tabletest.ByID(t, tbl, snap, id)
	dv, err := delta.ReadDV(context.Background(), tbl, f.DeletionVector)
	if err != nil {
		t.Fatal(err)
	}
	var keep []int64
	for i, x := range tabletest.FileIDs(t, tbl, f) {
		if !dv.Contains(uint64(i)) {
			keep = append(keep, x)
		}
	}
	rewritten := tabletest.WriteDataFile(t, tbl, keep)
	acts := []actions.Action{{Remove: &actions.Remove{Path: f.Path, DataChange: true, DeletionVector: f.DeletionVector}}, {Add: rewritten}}
	if len(fresh) > 0 {
		acts = append(acts, actions.Action{Add: tabletest.WriteDataFile(t, tbl, fresh)})
	}
	tx := &commit.Txn{Table: tbl, Snapshot: snap, Operation: "MERGE", IsolationLevel: "WriteSerializable",
		ReadFiles: map[string]bool{f.Path: true}, Actions: acts}
	v, err := tx.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// tryUpsert is upsert for concurrent tests: it returns false (and writes
// nothing live) when a concurrent commit removed the file it rewrote.
func tryUpsert(t testing.TB, tbl *delta.Table, pick func(snap *delta.Snapshot) *actions.Add, fresh []int64, freshPart map[string]*string) (bool, error) {
	snap, err := delta.LoadSnapshot(context.Background(), tbl, -1)
	if err != nil {
		return false, err
	}
	f := pick(snap)
	dv, err := delta.ReadDV(context.Background(), tbl, f.DeletionVector)
	if err != nil {
		return false, err
	}
	var keep []int64
	for i, x := range tabletest.FileIDs(t, tbl, f) {
		if !dv.Contains(uint64(i)) {
			keep = append(keep, x)
		}
	}
	rewritten := tabletest.WriteDataFile(t, tbl, keep)
	rewritten.PartitionValues = f.PartitionValues
	added := tabletest.WriteDataFile(t, tbl, fresh)
	added.PartitionValues = freshPart
	acts := []actions.Action{{Remove: &actions.Remove{Path: f.Path, DataChange: true, DeletionVector: f.DeletionVector}}, {Add: rewritten}, {Add: added}}
	tx := &commit.Txn{Table: tbl, Snapshot: snap, Operation: "MERGE", IsolationLevel: "WriteSerializable",
		ReadFiles: map[string]bool{f.Path: true}, Actions: acts}
	if _, err := tx.Commit(context.Background()); err != nil {
		if errors.Is(err, commit.ErrConflict) || errors.Is(err, commit.ErrMetadataChanged) {
			return false, nil // a real MERGE would re-run; the test simply picks again
		}
		return false, err
	}
	return true, nil
}

// The retention delete loses its race to a MERGE-like upsert on recent data
// and to a compaction of the very files it deletes from: the upsert's new
// files are skipped by stats, the deletions are remapped onto the
// compaction's output, and it commits without retrying.
func TestExpireReconcilesWithUpsertAndCompaction(t *testing.T) {
	tbl := tabletest.NewTable(t, fileURL(t), tabletest.IDRange(0, 10), tabletest.IDRange(10, 10), tabletest.IDRange(100, 10), tabletest.IDRange(110, 10))
	co := commit.Options{BeforePut: tabletest.Once(func(int64) {
		upsert(t, tbl, 105, tabletest.IDRange(120, 10))
		if _, err := compaction.Compact(context.Background(), tbl, compactOpts()); err != nil {
			t.Fatal(err)
		}
	})}
	res := expireBefore(t, tbl, 15, co)
	if res.Attempts != 1 {
		t.Fatalf("retention retried %d times; conflicts %v", res.Attempts, res.Conflicts)
	}
	if res.Conflicts[commit.KindReverseRemapped] != 2 || res.Conflicts[commit.KindSkippedByStats] == 0 {
		t.Fatalf("conflicts %v: want 2 reverse remaps and stats-skipped upsert files", res.Conflicts)
	}
	if res.RowsDeleted != 15 {
		t.Fatalf("rows deleted %d, want 15", res.RowsDeleted)
	}
	tabletest.WantIDs(t, tbl, tabletest.IDSet(tabletest.IDRange(15, 5), tabletest.IDRange(100, 30)))
}

// The acceptance scenario: retention by day runs beside a MERGE-like
// upserter on recent days and the compaction loop. The ranges are disjoint,
// so the retention delete never retries; expired rows are gone and every
// other row is present exactly once.
func TestExpireBesideConcurrentWriters(t *testing.T) {
	rounds := 10
	if testing.Short() {
		rounds = 4
	}
	var days []int
	for d := 0; d < 20; d++ {
		days = append(days, d, d) // two small files per day: work for the compactor
	}
	days = append(days, 100, 101, 102)
	tbl, byDay := tabletest.NewDayTable(t, days)
	var mu sync.Mutex
	written := map[int64]bool{} // id -> live unless its day expired
	dayOf := map[int64]int{}
	for d, ids := range byDay {
		for _, id := range ids {
			written[id] = true
			dayOf[id] = d
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	var upserts, compactions atomic.Int64
	nextID := atomic.Int64{}
	nextID.Store(100_000)
	wg.Add(2)
	go func() { // MERGE-like upserter on days >= 100
		defer wg.Done()
		r := rand.New(rand.NewPCG(7, 7))
		for {
			select {
			case <-stop:
				return
			default:
			}
			fresh := tabletest.IDRange(nextID.Add(10)-10, 10)
			day := tabletest.DayString(100 + r.IntN(5))
			ok, err := tryUpsert(t, tbl, func(snap *delta.Snapshot) *actions.Add {
				var recent []*actions.Add
				for _, f := range snap.Files {
					if *f.PartitionValues["day"] >= tabletest.DayString(100) {
						recent = append(recent, f)
					}
				}
				return recent[r.IntN(len(recent))]
			}, fresh, map[string]*string{"day": &day})
			if err != nil {
				errs <- fmt.Errorf("upsert: %w", err)
				return
			}
			if ok {
				upserts.Add(1)
				mu.Lock()
				for _, id := range fresh {
					written[id] = true
					dayOf[id] = 100 // recent: never expired
				}
				mu.Unlock()
			}
		}
	}()
	go func() { // compaction loop
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := compaction.Compact(context.Background(), tbl, compactOpts()); err != nil {
				errs <- fmt.Errorf("compaction: %w", err)
				return
			}
			compactions.Add(1)
		}
	}()
	expiredBefore := 0
	totalConflicts := map[string]int{}
	retried := 0
	for i := 1; i <= rounds; i++ {
		cutoff := 2 * i
		res, err := Expire(context.Background(), tbl, Options{Column: "day", Before: tabletest.DayString(cutoff)})
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("round %d: %v", i, err)
		}
		for k, n := range res.Conflicts {
			totalConflicts[k] += n
		}
		if res.Attempts != 1 {
			retried++
			t.Errorf("round %d retried (%d attempts, conflicts %v) although the writers touch disjoint days", i, res.Attempts, res.Conflicts)
		}
		expiredBefore = cutoff
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := map[int64]bool{}
	for id := range written {
		if dayOf[id] >= expiredBefore {
			want[id] = true
		}
	}
	tabletest.WantIDs(t, tbl, want)
	t.Logf("rounds=%d retried=%d upserts=%d compactions=%d conflicts by kind: %v",
		rounds, retried, upserts.Load(), compactions.Load(), totalConflicts)
}

// Column names are case-insensitive: a partition column named in another
// case is still a metadata-only partition delete.
func TestExpireOnAPartitionColumnNamedInAnotherCase(t *testing.T) {
	for _, col := range []string{"part", "PART"} {
		tbl := tabletest.CopyFixture(t, "dv-partitioned-with-checkpoint")
		res, err := Expire(context.Background(), tbl, Options{Column: col, EpochUnit: "days", Before: "5", Logger: tabletest.Logger(t)})
		if err != nil {
			t.Fatalf("column %s: %v", col, err)
		}
		if res.FilesScanned != 0 || res.FilesRemoved == 0 || res.RowsDeleted == 0 || res.CommittedVersion < 0 {
			t.Fatalf("column %s: %+v: want a metadata-only delete of whole partitions", col, res)
		}
	}
}

// A file without numRecords that the delete scans and empties still counts
// its rows.
func TestExpireCountsRowsOfFilesWithoutNumRecords(t *testing.T) {
	tbl := tabletest.CopyFixture(t, "stats-optional")
	res, err := Expire(context.Background(), tbl, Options{Column: "integer", EpochUnit: "seconds", Before: "2147483647", Logger: tabletest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesRemoved != 2 || res.RowsDeleted != 2 || res.FilesScanned != 1 {
		t.Fatalf("%+v: want both files removed, 2 rows deleted, the file without stats scanned", res)
	}
}

// Zone-less timestamp partition values are read in the writer's session
// zone when one is given: part-values-all-types holds 2021-09-08 11:11:11
// written in America/Los_Angeles (18:11:11Z), so a 15:00Z cutoff expires
// its rows only when they are wrongly read as UTC.
func TestExpireReadsTimestampPartitionsInTheGivenZone(t *testing.T) {
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		zone  *time.Location
		files int
	}{{nil, 2}, {la, 0}} {
		tbl := tabletest.CopyFixture(t, "part-values-all-types")
		res, err := Expire(context.Background(), tbl, Options{Column: "as_timestamp", Before: "2021-09-08T15:00:00Z", TimeZone: tc.zone, Logger: tabletest.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		// One row per file; the files have no numRecords, so their rows
		// are counted from the footers.
		if res.FilesRemoved != tc.files || res.RowsDeleted != int64(tc.files) || res.FilesScanned != 0 {
			t.Errorf("zone %v: %+v, want %d files (and rows) removed by partition", tc.zone, res, tc.files)
		}
	}
}

// compactOpts is a binpack compaction of every file, without settle window.
func compactOpts() compaction.RunOptions {
	pol := planner.DefaultPolicy()
	pol.Strategy = planner.StrategyBinpack
	pol.SettleWindow = 0
	return compaction.RunOptions{Policy: pol, EngineInfo: "compactord/test"}
}

// A retention DELETE whose put may still land keeps the objects it wrote
// (copy-on-write outputs, DV files) even when it gives up: here the put
// lands after the run returned, and deleting them would leave the committed
// version pointing at missing files.
func TestAmbiguousCommitKeepsTheDeletesObjects(t *testing.T) {
	for _, dvs := range []bool{false, true} {
		t.Run(fmt.Sprintf("deletion vectors %v", dvs), func(t *testing.T) {
			ctx := context.Background()
			tbl := tabletest.NewTable(t, fileURL(t), tabletest.IDRange(0, 10), tabletest.IDRange(10, 10))
			if !dvs {
				tabletest.DisableDVs(t, tbl)
			}
			late := &tabletest.LandsLate{LogStore: tbl.Log}
			tbl.Log = late
			_, err := Expire(ctx, tbl, Options{Column: "id", EpochUnit: "days", Before: "5", Commit: commit.Options{MaxAttempts: 1}, Logger: tabletest.Logger(t)})
			if !errors.Is(err, commit.ErrTooManyAttempts) {
				t.Fatalf("Expire = %v, want it to give up after the unknown outcome", err)
			}
			if err := late.Land(ctx); err != nil {
				t.Fatal(err)
			}
			// The DELETE landed after all: the table reads back without
			// the expired rows, through the objects the attempt wrote.
			tabletest.WantIDs(t, tbl, tabletest.IDSet(tabletest.IDRange(5, 15)))
		})
	}
}
