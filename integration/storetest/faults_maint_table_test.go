package storetest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	deltadv "github.com/compactord/compactord/delta/dv"

	"github.com/google/uuid"
	"github.com/parquet-go/parquet-go"
	"gocloud.dev/gcerrors"

	"github.com/compactord/compactord/checkpoint"
	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/testutil/stores"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

// The clocks of the maintenance trials, relative to the table's build:
// tombstones are written "old" (10 days before the build) or "recent" (3
// days after it); vacuums run 8 days after the build with the table's
// default 7-day retention (cutoff = build + 1 day: every listed file is
// older, old tombstones expired, recent ones inside the window); log
// cleanups run 32 days after it with the default 30-day log retention
// (every commit is older than the cutoff).
const (
	maintOld       = -10 * 24 * time.Hour
	maintRecent    = 3 * 24 * time.Hour
	maintVacuumAt  = 8 * 24 * time.Hour
	maintCleanupAt = 32 * 24 * time.Hour
	// maintBoundary is the checkpoint below which log cleanup deletes.
	maintBoundary = 10
)

// maintTable is a table built for the maintenance fault trials, and what
// each operation must delete and keep on it.
type maintTable struct {
	built time.Time
	// latest is the newest version after the build; rows its live rows.
	latest int64
	rows   stores.Rows
	// keep are the data and DV keys a version inside the vacuum window
	// needs: live adds, their DVs, recent tombstones' files and DVs.
	keep []string
	// expired are the data and DV keys of tombstones outside the window
	// that nothing live names: both vacuum modes must delete them.
	expired []string
	// orphans were written and never committed: a full vacuum deletes them.
	orphans []string
	// readableFrom is the oldest version whose files are all in keep: a
	// vacuum must leave every version from it on readable.
	readableFrom int64
	// logBelow are the log files below maintBoundary (log cleanup deletes
	// them); logKept the others (commits, checkpoints, _last_checkpoint).
	logBelow, logKept []string
	// noStats are the paths of live files written without statistics.
	noStats []string
}

// buildMaintTable writes, with no proxy in front, a DV-enabled table of
// real parquet at url: six files, then DV DELETEs and copy-on-write
// deletes whose tombstones are old or recent (file0's DV replaced, file1
// rewritten, file4 and its DV rewritten: expired; file2's first DV, file3,
// file5 and its DV: inside the window), checkpoints at 5 and 10, two files
// appended without statistics at 11, a DV DELETE on one of them at 12, and
// three orphans (two at the root, one in a subdirectory).
func buildMaintTable(t testing.TB, url string) *maintTable {
	t.Helper()
	ctx := context.Background()
	built := time.Now()
	old, recent := built.Add(maintOld), built.Add(maintRecent)
	var files [][]int64
	for i := int64(0); i < 6; i++ {
		files = append(files, tabletest.IDRange(i*100, 20))
	}
	tbl := tabletest.NewTableWith(t, url, tabletest.Spec{Config: map[string]string{"delta.checkpointInterval": "5"}}, files...)
	steps := []func(){
		func() { dvDeleteAt(t, tbl, old, 1, 2) },                                                 // v1: file0 gets a DV
		func() { dvDeleteAt(t, tbl, old, 3) },                                                    // v2: file0's first DV expires
		func() { cowDeleteAt(t, tbl, old, 100) },                                                 // v3: file1 expires
		func() { dvDeleteAt(t, tbl, recent, 200) },                                               // v4
		func() { dvDeleteAt(t, tbl, recent, 201) },                                               // v5: file2's first DV in the window
		func() { cowDeleteAt(t, tbl, recent, 300) },                                              // v6: file3 in the window
		func() { dvDeleteAt(t, tbl, old, 400) },                                                  // v7
		func() { cowDeleteAt(t, tbl, old, 401) },                                                 // v8: file4 and its DV expire
		func() { dvDeleteAt(t, tbl, recent, 500) },                                               // v9
		func() { cowDeleteAt(t, tbl, recent, 501) },                                              // v10: file5 and its DV in the window
		func() { appendNoStats(t, tbl, tabletest.IDRange(600, 20), tabletest.IDRange(700, 20)) }, // v11
		func() { dvDeleteAt(t, tbl, recent, 600) },                                               // v12
	}
	for i, step := range steps {
		step()
		if v := int64(i + 1); v%5 == 0 {
			if _, err := checkpoint.Write(ctx, tbl, v, checkpoint.Options{}); err != nil {
				t.Fatalf("checkpoint %d: %v", v, err)
			}
		}
	}
	mt := &maintTable{built: built}
	var snap *delta.Snapshot
	snap, mt.rows = stores.LiveRows(t, tbl)
	mt.latest = snap.Version
	for _, a := range snap.Files {
		if a.Stats == "" {
			mt.noStats = append(mt.noStats, a.Path)
		}
	}
	if mt.latest != int64(len(steps)) || len(mt.noStats) != 2 {
		t.Fatalf("maintenance table: version %d with %d files without stats; want %d and 2", mt.latest, len(mt.noStats), len(steps))
	}

	// What a vacuum at built+maintVacuumAt keeps and deletes, from the log.
	cutoff := built.Add(maintVacuumAt - 7*24*time.Hour).UnixMilli()
	keep := map[string]bool{}
	for _, a := range snap.Files {
		noteFile(t, keep, a.Path, a.DeletionVector)
	}
	expired := map[string]bool{}
	for v := int64(1); v <= mt.latest; v++ {
		acts, err := delta.ReadCommit(ctx, tbl, v)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range acts {
			if rm := a.Remove; rm != nil {
				if rm.DeletionTimestamp != nil && *rm.DeletionTimestamp >= cutoff {
					noteFile(t, keep, rm.Path, rm.DeletionVector)
				} else {
					noteFile(t, expired, rm.Path, rm.DeletionVector)
				}
			}
		}
	}
	for k := range expired {
		if keep[k] {
			delete(expired, k)
		}
	}
	mt.keep, mt.expired = sortedKeys(keep), sortedKeys(expired)
	if len(mt.expired) != 4 {
		t.Fatalf("maintenance table: %d expired keys %v, want 4 (file0's first DV, file1, file4 and its DV)", len(mt.expired), mt.expired)
	}
	mt.readableFrom = mt.latest
	for v := mt.latest - 1; v >= 0; v-- {
		s, err := delta.LoadSnapshot(ctx, tbl, v)
		if err != nil {
			t.Fatal(err)
		}
		ok := true
		for _, a := range s.Files {
			need := map[string]bool{}
			noteFile(t, need, a.Path, a.DeletionVector)
			for k := range need {
				ok = ok && keep[k]
			}
		}
		if !ok {
			break
		}
		mt.readableFrom = v
	}

	// Orphans: real parquet, never committed.
	for i := 0; i < 2; i++ {
		mt.orphans = append(mt.orphans, tabletest.WriteDataFile(t, tbl, tabletest.IDRange(900+int64(i)*10, 5)).Path)
	}
	sub := fmt.Sprintf("sub/part-00000-%s-c000.parquet", uuid.NewString())
	if err := tbl.Bucket.WriteAll(ctx, sub, parquetBytes(t, tabletest.IDRange(990, 5)), nil); err != nil {
		t.Fatal(err)
	}
	mt.orphans = append(mt.orphans, sub)
	sort.Strings(mt.orphans)

	// The log, split at the boundary log cleanup uses.
	l, err := delta.ListLog(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range l.Entries {
		if e.Version < maintBoundary {
			mt.logBelow = append(mt.logBelow, e.Key)
		} else {
			mt.logKept = append(mt.logKept, e.Key)
		}
	}
	mt.logKept = append(mt.logKept, logpath.LogDir+"_last_checkpoint")
	return mt
}

// noteFile adds the object key of a data file path and of its "u" DV.
func noteFile(t testing.TB, set map[string]bool, path string, dv *actions.DeletionVector) {
	t.Helper()
	k, err := actions.DecodePath(path)
	if err != nil {
		t.Fatal(err)
	}
	set[k] = true
	if dv != nil && dv.StorageType == "u" {
		dk, err := deltadv.DVFileKey(dv.PathOrInlineDv)
		if err != nil {
			t.Fatal(err)
		}
		set[dk] = true
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// dvDeleteAt commits a DV DELETE of ids whose tombstones carry the time at.
func dvDeleteAt(t testing.TB, tbl *delta.Table, at time.Time, ids ...int64) {
	t.Helper()
	snap := tabletest.Latest(t, tbl)
	rows := map[string][]int64{}
	for _, id := range ids {
		f, i := tabletest.ByID(t, tbl, snap, id)
		rows[f.Path] = append(rows[f.Path], i)
	}
	opts := tabletest.DeleteOptions{Options: commit.Options{Now: func() time.Time { return at }}}
	if _, err := tabletest.DeleteRows(context.Background(), tbl, snap, rows, opts); err != nil {
		t.Fatal(err)
	}
}

// cowDeleteAt rewrites the file holding id without it and without the rows
// its DV deletes; the tombstone carries the time at.
func cowDeleteAt(t testing.TB, tbl *delta.Table, at time.Time, id int64) {
	t.Helper()
	ctx := context.Background()
	snap := tabletest.Latest(t, tbl)
	f, _ := tabletest.ByID(t, tbl, snap, id)
	dv, err := delta.ReadDV(ctx, tbl, f.DeletionVector)
	if err != nil {
		t.Fatal(err)
	}
	var keep []int64
	for i, x := range tabletest.FileIDs(t, tbl, f) {
		if !dv.Contains(uint64(i)) && x != id {
			keep = append(keep, x)
		}
	}
	na := tabletest.WriteDataFile(t, tbl, keep)
	ts, size := at.UnixMilli(), f.Size
	tx := &commit.Txn{Table: tbl, Snapshot: snap, Operation: "DELETE", IsolationLevel: "WriteSerializable",
		ReadFiles: map[string]bool{f.Path: true},
		Actions: []actions.Action{
			{Remove: &actions.Remove{Path: f.Path, DeletionTimestamp: &ts, DataChange: true, Size: &size, DeletionVector: f.DeletionVector}},
			{Add: na}}}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// appendNoStats commits one file per ids slice, added without statistics.
func appendNoStats(t testing.TB, tbl *delta.Table, files ...[]int64) {
	t.Helper()
	snap := tabletest.Latest(t, tbl)
	var acts []actions.Action
	for _, ids := range files {
		a := tabletest.WriteDataFile(t, tbl, ids)
		a.Stats = ""
		acts = append(acts, actions.Action{Add: a})
	}
	tx := &commit.Txn{Table: tbl, Snapshot: snap, Operation: "WRITE", IsolationLevel: "WriteSerializable", IsBlindAppend: true, Actions: acts}
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func parquetBytes(t testing.TB, ids []int64) []byte {
	t.Helper()
	var b strings.Builder
	w := parquet.NewGenericWriter[tabletest.Row](&b)
	rows := make([]tabletest.Row, len(ids))
	for i := range ids {
		id, v := ids[i], fmt.Sprint("v", ids[i])
		rows[i] = tabletest.Row{ID: &id, V: &v}
	}
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return []byte(b.String())
}

// missingKeys returns the keys of tbl among keys that do not exist (an
// error other than NotFound counts as missing, named).
func missingKeys(ctx context.Context, tbl *delta.Table, keys []string) []string {
	var out []string
	for _, k := range keys {
		ok, err := tbl.Bucket.Exists(ctx, k)
		if err != nil {
			out = append(out, k+" ("+err.Error()+")")
		} else if !ok {
			out = append(out, k)
		}
	}
	return out
}

// presentKeys returns the keys among keys that still exist.
func presentKeys(ctx context.Context, tbl *delta.Table, keys []string) []string {
	var out []string
	for _, k := range keys {
		if ok, err := tbl.Bucket.Exists(ctx, k); err != nil || ok {
			out = append(out, k)
		}
	}
	return out
}

// rowsAt reads every live row of version v (an error, not a test failure:
// the trials run in goroutines and report what they find).
func rowsAt(ctx context.Context, tbl *delta.Table, v int64) (stores.Rows, *delta.Snapshot, error) {
	snap, err := delta.LoadSnapshot(ctx, tbl, v)
	if err != nil {
		return nil, nil, err
	}
	rows := stores.Rows{}
	for _, f := range snap.Files {
		if err := scanRows(ctx, tbl, snap, f, rows); err != nil {
			return nil, nil, fmt.Errorf("version %d: %w", v, err)
		}
	}
	return rows, snap, nil
}

func scanRows(ctx context.Context, tbl *delta.Table, snap *delta.Snapshot, f *actions.Add, rows stores.Rows) error {
	return stores.ScanFileRows(ctx, tbl, snap, f, func(row string, _ int64) { rows[row]++ })
}

// readableVersions checks that every version from..to loads and reads, and
// that the latest holds want; it returns one problem per failure.
func readableVersions(ctx context.Context, tbl *delta.Table, from, to int64, want stores.Rows) []string {
	var out []string
	for v := from; v <= to; v++ {
		rows, _, err := rowsAt(ctx, tbl, v)
		if err != nil {
			out = append(out, fmt.Sprintf("version %d unreadable: %v", v, err))
			continue
		}
		if v == to && want != nil {
			if lost, extra := rows.Diff(want); len(lost)+len(extra) > 0 {
				out = append(out, fmt.Sprintf("version %d: %d rows lost, %d extra", v, len(lost), len(extra)))
			}
		}
	}
	return out
}

// logKeys lists the objects under _delta_log/ (no temp files).
func logKeys(ctx context.Context, tbl *delta.Table) ([]string, error) {
	l, err := delta.ListLog(ctx, tbl)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range l.Entries {
		out = append(out, e.Key)
	}
	if ok, err := tbl.Bucket.Exists(ctx, logpath.LogDir+"_last_checkpoint"); err == nil && ok {
		out = append(out, logpath.LogDir+"_last_checkpoint")
	} else if err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}
