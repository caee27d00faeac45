package vacuum

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/compactord/compactord/internal/testutil/tabletest"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/failure"
)

const day = 24 * time.Hour

// scenario builds, on a table with the default 7-day retention:
//   - kept: a live file; a file removed 3 days before "now" (unexpired);
//     a live file with a DV; an orphan written 1 day before now; hidden
//     names; a fresh temp file in _delta_log;
//   - gone: a file removed 10 days before now; the old DV of a file whose
//     DV was replaced 10 days ago; an orphan and an upload temp file 10
//     days old; a stale _delta_log/.N.json.<random>.tmp.
type scenario struct {
	f                                     *fixture
	live, unexpired, expired, dvFile      *actions.Add
	orphanOld, orphanNew, tempOld, logTmp string
	oldDVKey, newDVKey                    string
}

func newScenario(t *testing.T) *scenario {
	f := newFixture(t, nil, "")
	s := &scenario{f: f}
	// 20 days before the vacuum: everything written.
	s.live = f.writeFile(ids(0, 10))
	s.unexpired = f.writeFile(ids(10, 10))
	s.expired = f.writeFile(ids(20, 10))
	s.dvFile = f.writeFile(ids(30, 10))
	f.commit(actions.Action{Add: s.live}, actions.Action{Add: s.unexpired}, actions.Action{Add: s.expired}, actions.Action{Add: s.dvFile})
	s.orphanOld = "part-00000-orphan-old.snappy.parquet"
	f.put(s.orphanOld, []byte("never committed"))
	s.tempOld = s.live.Path + ".17f1a2b3c4d5e6f7.tmp"
	f.put(s.tempOld, nil)
	s.logTmp = logpath.LogDir + ".00000000000000000002.json.123456789.tmp"
	f.put(s.logTmp, nil)
	f.put("_hidden/old.parquet", []byte("hidden"))
	f.put(".hidden.parquet", []byte("hidden"))
	f.put("_delta_log/_not_a_temp", []byte("log"))
	// A DELETE with a DV on dvFile, then another that replaces the DV: the
	// first DV file becomes unreferenced once the second lands.
	ctx := context.Background()
	f.now = f.now.Add(day) // 19 days before
	del := func(rows []int64) *actions.Add {
		snap, err := delta.LoadSnapshot(ctx, f.tbl, -1)
		if err != nil {
			t.Fatal(err)
		}
		out, err := tabletest.DeleteRows(ctx, f.tbl, snap, map[string][]int64{s.dvFile.Path: rows}, tabletest.DeleteOptions{Options: f.commitOpts()})
		if err != nil {
			t.Fatal(err)
		}
		f.touch(logpath.CommitKey(out.Version))
		snap, err = delta.LoadSnapshot(ctx, f.tbl, -1)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range snap.Files {
			if a.Path == s.dvFile.Path {
				k, _, err := dvKey(a.DeletionVector)
				if err != nil || k == "" {
					t.Fatalf("no DV file: %v", err)
				}
				f.touch(k)
				return a
			}
		}
		t.Fatal("dv file gone")
		return nil
	}
	first := del([]int64{0, 1})
	s.oldDVKey, _, _ = dvKey(first.DeletionVector)
	f.now = f.now.Add(9 * day) // 10 days before: replace the DV, remove expired
	second := del([]int64{2})
	s.newDVKey, _, _ = dvKey(second.DeletionVector)
	f.commit(f.remove(s.expired))
	f.now = f.now.Add(7 * day) // 3 days before
	f.commit(f.remove(s.unexpired))
	f.now = f.now.Add(2 * day) // 1 day before
	s.orphanNew = "part-00000-orphan-new.snappy.parquet"
	f.put(s.orphanNew, []byte("maybe a concurrent writer's"))
	f.put(logpath.LogDir+".00000000000000000009.json.987654321.tmp", nil)
	f.now = f.now.Add(day) // the vacuum
	return s
}

func (s *scenario) mustExist(t *testing.T, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if !s.f.exists(k) {
			t.Errorf("%s was deleted", k)
		}
	}
}

func (s *scenario) mustBeGone(t *testing.T, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if s.f.exists(k) {
			t.Errorf("%s is still there", k)
		}
	}
}

func (s *scenario) kept() []string {
	return []string{s.live.Path, s.unexpired.Path, s.dvFile.Path, s.newDVKey, s.orphanNew,
		"_hidden/old.parquet", ".hidden.parquet", "_delta_log/_not_a_temp",
		logpath.LogDir + ".00000000000000000009.json.987654321.tmp"}
}

func TestFullVacuumDeletesWhatNothingReferencesAndKeepsTheRest(t *testing.T) {
	s := newScenario(t)
	var listed []string
	res := s.f.vacuum(Options{Mode: Full, OnFile: func(f File) { listed = append(listed, f.Key) }})
	gone := []string{s.expired.Path, s.oldDVKey, s.orphanOld, s.tempOld, s.logTmp}
	s.mustBeGone(t, gone...)
	s.mustExist(t, s.kept()...)
	sort.Strings(listed)
	sort.Strings(gone)
	if len(listed) != len(gone) {
		t.Errorf("deleted %v, want %v", listed, gone)
	}
	if res.FilesToDelete != 5 || res.FilesDeleted != 5 || res.Orphans != 3 || res.TempFiles != 2 {
		t.Errorf("result %+v: want 5 to delete, 5 deleted, 3 orphans (2 temp)", res)
	}
	want := s.expired.Size + int64(len("never committed"))
	if res.BytesToDelete < want || res.BytesDeleted != res.BytesToDelete {
		t.Errorf("bytes to delete %d, deleted %d; want >= %d and equal", res.BytesToDelete, res.BytesDeleted, want)
	}
	// Rows are unchanged at the latest version.
	if _, err := delta.LoadSnapshot(context.Background(), s.f.tbl, -1); err != nil {
		t.Fatal(err)
	}
}

func TestVacuumCommitsSparksStartAndEndEntries(t *testing.T) {
	s := newScenario(t)
	res := s.f.vacuum(Options{Mode: Full, Retention: 2 * day, ForceRetention: true})
	if res.StartVersion < 0 || res.EndVersion != res.StartVersion+1 {
		t.Fatalf("start %d end %d", res.StartVersion, res.EndVersion)
	}
	start := s.f.commitInfo(res.StartVersion)
	if start["operation"] != "VACUUM START" {
		t.Errorf("operation %v", start["operation"])
	}
	params := start["operationParameters"].(map[string]any)
	if params["retentionCheckEnabled"] != false || params["defaultRetentionMillis"] != float64(7*day/time.Millisecond) ||
		params["specifiedRetentionMillis"] != float64(2*day/time.Millisecond) {
		t.Errorf("START parameters %v", params)
	}
	metrics := start["operationMetrics"].(map[string]any)
	if metrics["numFilesToDelete"] != "6" || metrics["sizeOfDataToDelete"] == "0" {
		// 2 days also expires the file removed 3 days ago.
		t.Errorf("START metrics %v", metrics)
	}
	end := s.f.commitInfo(res.EndVersion)
	if end["operation"] != "VACUUM END" || end["operationParameters"].(map[string]any)["status"] != "COMPLETED" {
		t.Errorf("END %v", end)
	}
	em := end["operationMetrics"].(map[string]any)
	if em["numDeletedFiles"] != "6" || em["numVacuumedDirectories"] != "1" {
		t.Errorf("END metrics %v", em)
	}
	if start["isBlindAppend"] != true || start["isolationLevel"] != "SnapshotIsolation" {
		t.Errorf("START commitInfo %v", start)
	}
}

func TestDryRunListsButDeletesAndCommitsNothing(t *testing.T) {
	s := newScenario(t)
	before, err := delta.LatestVersion(context.Background(), s.f.tbl)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	res := s.f.vacuum(Options{Mode: Full, DryRun: true, OnFile: func(File) { n++ }})
	if n != 5 || res.FilesToDelete != 5 || res.FilesDeleted != 0 {
		t.Errorf("dry run listed %d, result %+v", n, res)
	}
	s.mustExist(t, s.expired.Path, s.orphanOld, s.oldDVKey)
	after, _ := delta.LatestVersion(context.Background(), s.f.tbl)
	if after != before {
		t.Errorf("dry run committed: version %d -> %d", before, after)
	}
}

func TestAShorterRetentionIsRefusedUnlessForced(t *testing.T) {
	s := newScenario(t)
	_, err := s.f.tryVacuum(Options{Mode: Full, Retention: time.Hour})
	if !errors.Is(err, ErrRetentionTooShort) {
		t.Fatalf("err = %v, want ErrRetentionTooShort", err)
	}
	s.mustExist(t, s.expired.Path, s.orphanOld)
	res := s.f.vacuum(Options{Mode: Full, Retention: 2 * time.Hour, ForceRetention: true})
	s.mustBeGone(t, s.orphanNew, s.unexpired.Path)
	if res.RetentionMillis != (2 * time.Hour).Milliseconds() {
		t.Errorf("retention %d", res.RetentionMillis)
	}
}

func TestTheTablePropertySetsTheRetention(t *testing.T) {
	f := newFixture(t, map[string]string{PropDeletedFileRetention: "interval 2 days"}, "")
	a := f.writeFile(ids(0, 3))
	f.commit(actions.Action{Add: a})
	f.now = f.now.Add(day)
	f.commit(f.remove(a))
	f.now = f.now.Add(day + time.Hour)
	f.vacuum(Options{Mode: Full})
	if !f.exists(a.Path) {
		t.Fatalf("removed 25h ago with a 2-day retention: deleted")
	}
	f.now = f.now.Add(day)
	f.vacuum(Options{Mode: Full})
	if f.exists(a.Path) {
		t.Fatalf("removed 49h ago with a 2-day retention: kept")
	}
}

func TestLiteVacuumDeletesExpiredTombstonesFromTheCommits(t *testing.T) {
	s := newScenario(t)
	res := s.f.vacuum(Options{Mode: Lite})
	// Lite deletes the expired file and the replaced DV, and the stale log
	// temp file (one listing of _delta_log), but not orphans of data dirs.
	s.mustBeGone(t, s.expired.Path, s.oldDVKey, s.logTmp)
	s.mustExist(t, append(s.kept(), s.orphanOld, s.tempOld)...)
	if res.EligibleStartVersion != 0 || res.EligibleEndVersion < 3 {
		t.Errorf("eligible commits %d..%d", res.EligibleStartVersion, res.EligibleEndVersion)
	}
	info, err := readLastVacuumInfo(context.Background(), s.f.tbl)
	if err != nil || info == nil || *info != res.EligibleEndVersion {
		t.Fatalf("_last_vacuum_info = %v, %v; want %d", info, err, res.EligibleEndVersion)
	}
	// The next lite vacuum starts after the recorded window.
	s.f.now = s.f.now.Add(5 * day)
	res2 := s.f.vacuum(Options{Mode: Lite})
	if res2.EligibleStartVersion != res.EligibleEndVersion+1 {
		t.Errorf("second lite vacuum started at %d, want %d", res2.EligibleStartVersion, res.EligibleEndVersion+1)
	}
	s.mustBeGone(t, s.unexpired.Path)
}

func TestLiteVacuumSaysWhenTheCommitsItNeedsWereCleanedUp(t *testing.T) {
	s := newScenario(t)
	// The snapshot a checkpoint would give once log cleanup took versions
	// 0 and 1.
	snap, err := delta.LoadSnapshot(context.Background(), s.f.tbl, -1)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []int64{0, 1} {
		if err := os.Remove(filepath.Join(s.f.dir, filepath.FromSlash(logpath.CommitKey(v)))); err != nil {
			t.Fatal(err)
		}
	}
	_, err = Run(context.Background(), s.f.tbl, Options{Mode: Lite, Now: s.f.clock, SpillDir: t.TempDir(),
		Snapshots: func(context.Context, *delta.Table, int64) (*delta.Snapshot, error) { return snap, nil }})
	if !errors.Is(err, ErrCannotVacuumLite) {
		t.Fatalf("err = %v, want ErrCannotVacuumLite", err)
	}
	s.mustExist(t, s.expired.Path)
}

func TestVacuumRefusesCatalogManagedAndUnsupportedTables(t *testing.T) {
	for _, tc := range []struct{ name, protocol string }{
		{"catalogManaged", `{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["catalogManaged"],"writerFeatures":["catalogManaged"]}`},
		{"unknown writer feature", `{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["someFutureFeature"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, tc.protocol)
			a := f.writeFile(ids(0, 1))
			f.put("orphan.parquet", []byte("x"))
			f.now = f.now.Add(30 * day)
			_, err := f.tryVacuum(Options{Mode: Full})
			var fe *delta.UnsupportedFeatureError
			if err == nil || (!errors.Is(err, ErrCatalogManaged) && !errors.As(err, &fe)) {
				t.Fatalf("err = %v", err)
			}
			if failure.Of(err) != failure.Halt {
				t.Errorf("class %v, want halt", failure.Of(err))
			}
			if !f.exists("orphan.parquet") || !f.exists(a.Path) {
				t.Error("a refused vacuum deleted files")
			}
		})
	}
}

func TestAnEmptyVacuumWritesNothingToTheLog(t *testing.T) {
	f := newFixture(t, nil, "")
	a := f.writeFile(ids(0, 3))
	f.commit(actions.Action{Add: a})
	f.now = f.now.Add(30 * day)
	before, _ := delta.LatestVersion(context.Background(), f.tbl)
	res := f.vacuum(Options{Mode: Full})
	after, _ := delta.LatestVersion(context.Background(), f.tbl)
	if res.FilesToDelete != 0 || after != before || res.StartVersion != -1 {
		t.Fatalf("empty vacuum: %+v, version %d -> %d", res, before, after)
	}
}

func TestFullVacuumRemovesDirectoriesItEmptied(t *testing.T) {
	f := newFixture(t, nil, "")
	f.put("stale/part-0.parquet", []byte("x"))
	f.put("stale/deeper/part-1.parquet", []byte("y"))
	f.put("busy/part-2.parquet", []byte("z"))
	f.now = f.now.Add(10 * day)
	f.put("busy/part-3.parquet", []byte("fresh"))
	res := f.vacuum(Options{Mode: Full})
	if f.exists("stale") || !f.exists("busy/part-3.parquet") || f.exists("busy/part-2.parquet") {
		t.Fatalf("stale dir exists %v, busy fresh file %v", f.exists("stale"), f.exists("busy/part-3.parquet"))
	}
	if res.DirsDeleted != 2 || res.FilesDeleted != 3 || res.Directories != 4 {
		t.Errorf("result %+v: want 3 files, 2 dirs deleted, 4 directories", res)
	}
}
