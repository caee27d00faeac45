package logcleanup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/checkpoint"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/logtest"
)

// day0 is midnight UTC; commit v of the test tables is written at day0 +
// v days + 1h.
var day0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func commitTime(v int64) time.Time { return day0.Add(time.Duration(v)*24*time.Hour + time.Hour) }

// history builds a table with commits 0..latest and our checkpoints at
// the given versions, file times following commitTime.
func history(t *testing.T, spec logtest.Spec, latest int64, checkpoints ...int64) (*delta.Table, string) {
	t.Helper()
	dir := t.TempDir()
	tbl := logtest.Create(t, dir, spec)
	ctx := context.Background()
	prev := int64(1)
	for _, v := range append(checkpoints, latest) {
		if v >= prev {
			logtest.Grow(t, tbl, prev, v, spec.Partitioned)
			prev = v + 1
		}
		if v == latest {
			break
		}
		res, err := checkpoint.Write(ctx, tbl, v, checkpoint.Options{Now: func() time.Time { return commitTime(v) }})
		if err != nil {
			t.Fatal(err)
		}
		if res.Checkpoint == nil {
			t.Fatalf("checkpoint %d not written: %s", v, res.Skipped)
		}
	}
	logtest.SetTimes(t, dir, commitTime)
	return tbl, dir
}

// states loads every version that loads.
func states(t *testing.T, tbl *delta.Table, latest int64) map[int64]logtest.State {
	t.Helper()
	out := map[int64]logtest.State{}
	for v := int64(0); v <= latest; v++ {
		s, err := delta.LoadSnapshot(context.Background(), tbl, v)
		if err != nil {
			if errors.Is(err, logpath.ErrVersionNotFound) {
				continue
			}
			t.Fatal(err)
		}
		out[v] = logtest.StateOf(s)
	}
	return out
}

func keys(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for k := range testutil.Files(t, filepath.Join(dir, "_delta_log")) {
		out["_delta_log/"+k] = true
	}
	return out
}

func TestCleanupDeletesBelowTheNewestCheckpointBeforeTheCutoff(t *testing.T) {
	ctx := context.Background()
	tbl, dir := history(t, logtest.Spec{}, 59, 10, 20, 30, 40, 50)
	before := states(t, tbl, 59)
	if len(before) != 60 {
		t.Fatalf("%d versions load before cleanup", len(before))
	}
	// 30 days of retention at day 55 + 5h: cutoff is midnight of day 25,
	// so commit 24 (day 24 + 1h) is the cutoff commit and checkpoint 20 the
	// boundary.
	now := day0.Add(55*24*time.Hour + 5*time.Hour)
	dry, err := Cleanup(ctx, tbl, Options{Now: func() time.Time { return now }, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys(t, dir)) == 0 || len(states(t, tbl, 59)) != 60 {
		t.Fatal("the dry run deleted something")
	}
	res, err := Cleanup(ctx, tbl, Options{Now: func() time.Time { return now }, Concurrency: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.CutoffCommit != 24 || res.Boundary != 20 {
		t.Fatalf("cutoff commit %d, boundary %d; want 24, 20", res.CutoffCommit, res.Boundary)
	}
	if !res.Cutoff.Equal(day0.Add(25 * 24 * time.Hour)) {
		t.Fatalf("cutoff %s", res.Cutoff)
	}
	if len(dry.Deleted) != len(res.Deleted) || len(res.Deleted) != 21 { // commits 0..19 and checkpoint 10
		t.Fatalf("deleted %d files (dry run listed %d), want 21", len(res.Deleted), len(dry.Deleted))
	}
	after := states(t, tbl, 59)
	for v := int64(0); v <= 59; v++ {
		s, ok := after[v]
		switch {
		case v < 20 && ok:
			t.Errorf("version %d still loads", v)
		case v >= 20 && !ok:
			t.Errorf("version %d no longer loads", v)
		case v >= 20 && !logtest.SameState(s, before[v]):
			t.Errorf("version %d changed:\n%+v\n%+v", v, s, before[v])
		}
	}
	left := keys(t, dir)
	for _, k := range []string{logpath.CommitKey(20), logpath.CheckpointKey(20), logpath.CheckpointKey(30)} {
		if !left[k] {
			t.Errorf("%s was deleted", k)
		}
	}
	// A second run finds nothing more to do.
	again, err := Cleanup(ctx, tbl, Options{Now: func() time.Time { return now }})
	if err != nil || len(again.Deleted) != 0 {
		t.Fatalf("second run: %v, deleted %d", err, len(again.Deleted))
	}
}

func TestCleanupDeletesNothingWithoutACoveringCheckpoint(t *testing.T) {
	ctx := context.Background()
	now := day0.Add(55*24*time.Hour + 5*time.Hour) // cutoff commit 24
	tests := []struct {
		name        string
		spec        logtest.Spec
		checkpoints []int64
		want        string // in Skipped
	}{
		{"no checkpoint at all", logtest.Spec{}, nil, "no readable _last_checkpoint"},
		{"only checkpoints after the cutoff", logtest.Spec{}, []int64{30, 50}, "no checkpoint at or before the cutoff commit 24"},
		{"cleanup disabled", logtest.Spec{Configuration: map[string]string{"delta.enableExpiredLogCleanup": "false"}}, []int64{10, 20}, "enableExpiredLogCleanup is false"},
		{"retention longer than the history", logtest.Spec{Configuration: map[string]string{"delta.logRetentionDuration": "interval 60 days"}}, []int64{10, 20}, "no commit is older than the cutoff"},
		{"checkpoint protection below the protected version", logtest.Spec{
			Protocol:      &actions.Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"checkpointProtection", "appendOnly", "invariants"}},
			Configuration: map[string]string{"delta.requireCheckpointProtectionBeforeVersion": "30"}}, []int64{10, 20}, "checkpointProtection"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tbl, dir := history(t, tc.spec, 59, tc.checkpoints...)
			before := keys(t, dir)
			res, err := Cleanup(ctx, tbl, Options{Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Deleted) != 0 || !strings.Contains(res.Skipped, tc.want) {
				t.Fatalf("deleted %d, skipped %q; want nothing and %q", len(res.Deleted), res.Skipped, tc.want)
			}
			if len(keys(t, dir)) != len(before) {
				t.Fatal("files disappeared")
			}
		})
	}
}

func TestCleanupCutsProtectedHistoryInOneGo(t *testing.T) {
	ctx := context.Background()
	spec := logtest.Spec{
		Protocol:      &actions.Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"checkpointProtection", "appendOnly", "invariants"}},
		Configuration: map[string]string{"delta.requireCheckpointProtectionBeforeVersion": "20"}}
	tbl, _ := history(t, spec, 59, 10, 20, 30)
	res, err := Cleanup(ctx, tbl, Options{Now: func() time.Time { return day0.Add(55*24*time.Hour + 5*time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Boundary != 20 || len(res.Deleted) != 21 {
		t.Fatalf("boundary %d, %d deleted (%s)", res.Boundary, len(res.Deleted), res.Skipped)
	}
	// Commits went before checkpoints.
	lastCommit, firstCheckpoint := -1, len(res.Deleted)
	for i, f := range res.Deleted {
		if f.Kind == delta.LogCommit {
			lastCommit = i
		}
		if f.Kind.IsCheckpoint() && i < firstCheckpoint {
			firstCheckpoint = i
		}
	}
	if lastCommit > firstCheckpoint {
		t.Fatal("a checkpoint was deleted before the commits it covers")
	}
}

func TestCleanupOfV2TableWritesCompatCheckpointAndDropsUnreferencedSidecars(t *testing.T) {
	ctx := context.Background()
	spec := logtest.Spec{
		Protocol: &actions.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"v2Checkpoint"},
			WriterFeatures: []string{"v2Checkpoint", "appendOnly", "invariants"}},
		Configuration: map[string]string{"delta.checkpointPolicy": "v2"}}
	tbl, dir := history(t, spec, 59, 10, 20, 30)
	before := states(t, tbl, 59)
	sidecars := func() map[string]bool {
		out := map[string]bool{}
		for k := range keys(t, dir) {
			if strings.Contains(k, "/_sidecars/") {
				out[k] = true
			}
		}
		return out
	}
	all := sidecars()
	if len(all) != 3 {
		t.Fatalf("%d sidecars, want one per checkpoint", len(all))
	}
	// Sidecars are old too.
	for k := range all {
		old := commitTime(5)
		if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(k)), old, old); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Cleanup(ctx, tbl, Options{Now: func() time.Time { return day0.Add(55*24*time.Hour + 5*time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.CompatCheckpoint != logpath.CheckpointKey(30) {
		t.Fatalf("compatibility checkpoint %q", res.CompatCheckpoint)
	}
	left := sidecars()
	if len(left) != 2 {
		t.Fatalf("%d sidecars left, want those of checkpoints 20 and 30", len(left))
	}
	var gone int
	for _, f := range res.Deleted {
		if f.Kind == delta.LogSidecar {
			gone++
		}
	}
	if gone != 1 {
		t.Fatalf("%d sidecars deleted", gone)
	}
	after := states(t, tbl, 59)
	for v := int64(20); v <= 59; v++ {
		if !logtest.SameState(after[v], before[v]) {
			t.Errorf("version %d changed", v)
		}
	}
}

func TestCleanupRefusesCatalogManagedTables(t *testing.T) {
	src := testutil.DeltaTable(t, "catalog-managed-ict-staged")
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	tbl, err := delta.OpenTable(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	_, err = Cleanup(context.Background(), tbl, Options{})
	if !errors.Is(err, ErrCatalogManaged) {
		t.Fatalf("err = %v, want ErrCatalogManaged", err)
	}
}

// A cleanup stopped after any number of deletes (a crash between two store
// calls) leaves every version at or after the boundary loading exactly as
// before, and a later run finishes the job.
func TestCleanupInterruptedAtEveryDeleteLeavesRetainedVersionsIntact(t *testing.T) {
	ctx := context.Background()
	now := day0.Add(55*24*time.Hour + 5*time.Hour) // boundary 20: 21 deletes
	for stop := 0; stop <= 21; stop += 3 {
		t.Run(fmt.Sprintf("after %d deletes", stop), func(t *testing.T) {
			tbl, _ := history(t, logtest.Spec{}, 39, 10, 20, 30)
			before := states(t, tbl, 39)
			n := 0
			crash := errors.New("crash")
			_, err := Cleanup(ctx, tbl, Options{Now: func() time.Time { return now }, Concurrency: 1, OnDelete: func(string) error {
				if n == stop {
					return crash
				}
				n++
				return nil
			}})
			if stop < 21 && !errors.Is(err, crash) {
				t.Fatalf("err = %v", err)
			}
			after := states(t, tbl, 39)
			for v := int64(20); v <= 39; v++ {
				if !logtest.SameState(after[v], before[v]) {
					t.Fatalf("version %d changed after an interrupted cleanup", v)
				}
			}
			if _, err := Cleanup(ctx, tbl, Options{Now: func() time.Time { return now }}); err != nil {
				t.Fatal(err)
			}
			final := states(t, tbl, 39)
			if len(final) != 20 {
				t.Fatalf("%d versions load after the second run, want 20..39", len(final))
			}
		})
	}
}

// The daemon's operation commits nothing; what it deleted is its report's
// Done line (so the run is "done", not "noop"), and a run that deletes
// nothing has none.
func TestTheOperationSaysWhatItDeleted(t *testing.T) {
	ctx := context.Background()
	tbl, _ := history(t, logtest.Spec{}, 59, 10, 20, 30, 40, 50)
	now := day0.Add(55*24*time.Hour + 5*time.Hour)
	op := &Op{Options: Options{Now: func() time.Time { return now }}}
	out, err := op.Run(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if out.Committed || len(out.Done) != 1 || !strings.HasPrefix(out.Done[0], "21 expired log files deleted (") ||
		!strings.HasSuffix(out.Done[0], "), the log kept from the checkpoint of version 20") {
		t.Fatalf("committed %v, done %q", out.Committed, out.Done)
	}
	if out, err = op.Run(ctx, tbl); err != nil || len(out.Done) != 0 {
		t.Fatalf("second run: %v, done %q", err, out.Done)
	}
}
