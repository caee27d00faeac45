package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/scheduler"
	"github.com/compactord/compactord/tableop"
)

// staleReadOp fails as an operation that read an older snapshot would: it
// met every file of missing missing from the store.
type staleReadOp struct{ missing []string }

func (staleReadOp) Name() string { return "stale" }

func (o staleReadOp) Run(context.Context, *delta.Table) (tableop.Result, error) {
	var errs []error
	for _, p := range o.missing {
		errs = append(errs, fmt.Errorf("job: %w", &failure.MissingFileError{Kind: failure.DataFile, Path: p, DataFile: p, Err: errors.New("NotFound")}))
	}
	return tableop.Result{}, errors.Join(errs...)
}

// Of two data files an operation found missing, one is still named by the
// newest snapshot and one was removed (and deleted) by a newer commit, as
// another engine's rewrite and vacuum would: only the first is reported as
// missing, so the scheduler never counts the second towards its quarantine
// (its next run plans on the newer snapshot instead).
func TestOnlyAMissingFileTheNewestSnapshotStillNamesIsReportedMissing(t *testing.T) {
	dir := t.TempDir()
	tbl := tabletest.NewTable(t, "file://"+dir, tabletest.IDRange(0, 10), tabletest.IDRange(10, 10), tabletest.IDRange(20, 10))
	snap := tabletest.Latest(t, tbl)
	lost, replaced := snap.Files[0].Path, snap.Files[1].Path
	tabletest.PutCommit(t, tbl, snap.Version+1, []string{
		`{"commitInfo":{"timestamp":1700000000000,"operation":"OPTIMIZE"}}`,
		fmt.Sprintf(`{"remove":{"path":%q,"deletionTimestamp":1700000000000,"dataChange":false}}`, replaced),
	})
	for _, p := range []string{lost, replaced} {
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
			t.Fatal(err)
		}
	}
	op := staleReadOp{missing: []string{lost, replaced}}
	b := &Backend{Tables: NewTables(), Ops: []Factory{{Name: "stale", New: func(policies.Policy, tableop.Env) (tableop.Op[*delta.Table], bool, error) {
		return op, true, nil
	}}}}
	defer b.Tables.Close()
	p := testPolicy("t")
	p.URL = tbl.URL
	rep, err := b.Run(context.Background(), scheduler.RunRequest[policies.Policy]{Table: "t", Op: "stale", Policy: p})
	if failure.Of(err) != failure.Retry || !slices.Equal(rep.Missing, []string{lost}) {
		t.Fatalf("missing %v (%v): want only %s", rep.Missing, err, lost)
	}
}

// Two replicas save their lists of one table: the stored list holds both
// (a compare-and-swap merge, keyed by canonical path: "./x" and "x" are one
// file), a poll leaves the quarantined file out of the small-file backlog,
// and a save after a commit removed the file drops it.
func TestTheStoredQuarantineMergesReplicasByCanonicalPathAndDropsFilesNoLongerLive(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl := tabletest.NewTable(t, "file://"+dir, tabletest.IDRange(0, 10), tabletest.IDRange(10, 10), tabletest.IDRange(20, 10))
	snap := tabletest.Latest(t, tbl)
	a, c := snap.Files[0], snap.Files[2]
	p := testPolicy("t")
	p.URL = tbl.URL
	p.SettleWindow = 0
	one, two := &Backend{Tables: NewTables()}, &Backend{Tables: NewTables()}
	defer one.Tables.Close()
	defer two.Tables.Close()
	since := time.Unix(1_700_000_000, 0).UTC()
	if _, err := one.QuarantineStore().Save(ctx, p, []scheduler.Quarantined{{Path: a.Path, Reason: scheduler.QuarantineMissing, Since: since}}); err != nil {
		t.Fatal(err)
	}
	got, err := two.QuarantineStore().Save(ctx, p, []scheduler.Quarantined{{Path: "./" + a.Path, Reason: scheduler.QuarantineCorrupt, Since: since},
		{Path: c.Path, Reason: scheduler.QuarantineCorrupt, Since: since}})
	if err != nil {
		t.Fatal(err)
	}
	want := []scheduler.Quarantined{{Path: a.Path, Reason: scheduler.QuarantineMissing, Since: since}, {Path: c.Path, Reason: scheduler.QuarantineCorrupt, Since: since}}
	slices.SortFunc(want, func(x, y scheduler.Quarantined) int { return strings.Compare(x.Path, y.Path) })
	if !slices.Equal(got, want) {
		t.Fatalf("merged %+v, want %+v", got, want)
	}
	if loaded, err := one.QuarantineStore().Load(ctx, p); err != nil || !slices.Equal(loaded, want) {
		t.Fatalf("loaded %+v (%v), want %+v", loaded, err, want)
	}
	res, err := one.Poll(ctx, p, -1)
	if err != nil {
		t.Fatal(err)
	}
	if b := res.Backlog; b.QuarantinedFiles != 2 || b.SmallFiles != 1 || b.MergeableFiles != 0 || b.Files != 3 {
		t.Fatalf("backlog %+v: want the quarantined files apart and one small file", b)
	}

	tabletest.PutCommit(t, tbl, snap.Version+1, []string{
		`{"commitInfo":{"timestamp":1700000000000,"operation":"DELETE"}}`,
		fmt.Sprintf(`{"remove":{"path":%q,"deletionTimestamp":1700000000000,"dataChange":true}}`, c.Path),
	})
	if _, err := one.Poll(ctx, p, snap.Version); err != nil {
		t.Fatal(err)
	}
	got, err = one.QuarantineStore().Save(ctx, p, want)
	if err != nil || len(got) != 1 || got[0].Path != a.Path {
		t.Fatalf("after %s left the table: %+v (%v)", c.Path, got, err)
	}
	if loaded, err := two.QuarantineStore().Load(ctx, p); err != nil || len(loaded) != 1 || loaded[0].Path != a.Path {
		t.Fatalf("stored after the prune: %+v (%v)", loaded, err)
	}
}
