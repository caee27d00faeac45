package checkpointwrite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/logtest"
)

// Advancing a slim snapshot gives a slim one: its carried-over files are
// still cut, so it is refused by WriteCheckpoint and cannot be cut to
// other columns.
func TestAdvanceOfASlimSnapshotIsSlim(t *testing.T) {
	dir, full := loadBenchTable(t, 500)
	tbl := logtest.Open(t, dir)
	ctx := context.Background()
	old, err := delta.LoadSnapshot(ctx, tbl, full.Version-5)
	if err != nil {
		t.Fatal(err)
	}
	cols := [][]string{{"id"}}
	slim, err := old.Slim(cols, nil)
	if err != nil {
		t.Fatal(err)
	}
	next, ok, err := delta.Advance(ctx, tbl, slim, 100)
	if err != nil || !ok || next.Version != full.Version {
		t.Fatalf("advance to %d: %v %v %v", full.Version, next, ok, err)
	}
	if !next.IsSlim() || !next.SlimmableTo(cols) || next.SlimmableTo(nil) {
		t.Fatalf("advanced slim snapshot: slim %v, to id %v, to none %v; want true, true, false", next.IsSlim(), next.SlimmableTo(cols), next.SlimmableTo(nil))
	}
	if _, err := WriteCheckpoint(ctx, tbl, next, CheckpointOptions{}); err == nil {
		t.Fatal("a checkpoint was written from an advanced slim snapshot")
	}
}

// TestLoadRefusesImpossibleNumbersInACheckpoint writes a checkpoint of a
// snapshot whose file carries an impossible number (as a buggy writer's
// checkpoint would) and loads the table from it: refused, naming the
// checkpoint part and the file.
func TestLoadRefusesImpossibleNumbersInACheckpoint(t *testing.T) {
	for _, c := range []struct {
		name  string
		spoil func(a *actions.Add)
		want  string
	}{
		{"negative size", func(a *actions.Add) { a.Size = -1 << 63 }, "negative size"},
		{"cardinality above numRecords", func(a *actions.Add) { a.DeletionVector.Cardinality = 11 }, "deletes 11 rows but the file has 10"},
		{"negative numRecords", func(a *actions.Add) { a.Stats = `{"numRecords":-10}`; a.DeletionVector = nil }, "negative numRecords"},
		{"negative offset", func(a *actions.Add) { o := int32(-3); a.DeletionVector.Offset = &o }, "offset out of range"},
		{"negative sizeInBytes", func(a *actions.Add) { a.DeletionVector.SizeInBytes = -3 }, "sizeInBytes out of range"},
		{"negative cardinality", func(a *actions.Add) { a.DeletionVector.Cardinality = -3 }, "negative cardinality"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			dir := testutil.CopyDeltaTable(t, "dv-small")
			tbl := logtest.Open(t, dir)
			snap, err := delta.LoadSnapshot(ctx, tbl, -1)
			if err != nil {
				t.Fatal(err)
			}
			c.spoil(snap.Files[0])
			info, err := WriteCheckpoint(ctx, tbl, snap, CheckpointOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// The commits the checkpoint covers go, as log cleanup would
			// delete them: the checkpoint is all there is.
			for v := int64(0); v <= snap.Version; v++ {
				if err := os.Remove(filepath.Join(dir, filepath.FromSlash(logpath.CommitKey(v)))); err != nil {
					t.Fatal(err)
				}
			}
			_, err = delta.LoadSnapshot(ctx, tbl, -1)
			var cf *failure.CorruptFileError
			if !errors.As(err, &cf) || cf.Kind != failure.Checkpoint {
				t.Fatalf("load: %v, want a corrupt checkpoint (%s)", err, info.Key)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), snap.Files[0].Path) {
				t.Errorf("load: %v, want %q naming %s", err, c.want, snap.Files[0].Path)
			}
		})
	}
}
