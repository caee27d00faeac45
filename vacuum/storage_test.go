package vacuum

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/internal/testutil/tabletest"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/planner"
)

// dataBytes sums the sizes of every file outside _delta_log/ and
// _compactord/.
func dataBytes(t testing.TB, dir string) (n int64, files int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "_delta_log" || rel == "_compactord" {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += info.Size()
		files++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n, files
}

// TestAfterCompactionAndVacuumTheTableStoresOnlyItsLiveFiles: 40 small
// appends, DV DELETEs on a quarter of them, a full compaction, then a full
// vacuum once the tombstones expired: the bytes on disk outside the log
// are exactly the live files' bytes.
func TestAfterCompactionAndVacuumTheTableStoresOnlyItsLiveFiles(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil, "")
	for i := range 40 {
		f.commit(actions.Action{Add: f.writeFile(ids(int64(i)*50, 50))})
		f.now = f.now.Add(time.Minute)
	}
	snap, err := delta.LoadSnapshot(ctx, f.tbl, -1)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range snap.Files {
		if i%4 != 0 {
			continue
		}
		cur, _ := delta.LoadSnapshot(ctx, f.tbl, -1)
		out, err := tabletest.DeleteRows(ctx, f.tbl, cur, map[string][]int64{a.Path: {1, 3, 5}}, tabletest.DeleteOptions{Options: f.commitOpts()})
		if err != nil {
			t.Fatal(err)
		}
		f.touchDVs(out.Version)
	}
	before, beforeFiles := dataBytes(t, f.dir)
	pol := planner.DefaultPolicy()
	pol.Strategy = planner.StrategyBinpack
	pol.SettleWindow = 0
	res, err := compaction.Compact(ctx, f.tbl, compaction.RunOptions{Policy: pol, Now: f.clock, EngineInfo: "compactord/test"})
	if err != nil || res.CommittedVersion < 0 {
		t.Fatalf("compaction: %v, %+v", err, res)
	}
	compacted, compactedFiles := dataBytes(t, f.dir)
	f.now = f.now.Add(8 * 24 * time.Hour)
	vres := f.vacuum(Options{Mode: Full})
	after, afterFiles := dataBytes(t, f.dir)
	snap, err = delta.LoadSnapshot(ctx, f.tbl, -1)
	if err != nil {
		t.Fatal(err)
	}
	var live int64
	for _, a := range snap.Files {
		live += a.Size
		if a.DeletionVector != nil {
			t.Fatalf("compaction left a DV on %s", a.Path)
		}
	}
	t.Logf("data on disk: %d bytes in %d files before compaction, %d in %d after it, %d in %d after vacuum; live files %d bytes in %d (vacuum deleted %d files, %d bytes)",
		before, beforeFiles, compacted, compactedFiles, after, afterFiles, live, len(snap.Files), vres.FilesDeleted, vres.BytesDeleted)
	if after != live || afterFiles != len(snap.Files) {
		t.Fatalf("after vacuum %d bytes in %d files on disk, live files are %d bytes in %d", after, afterFiles, live, len(snap.Files))
	}
	if compacted-after != vres.BytesDeleted {
		t.Errorf("vacuum reports %d bytes deleted, disk shrank by %d", vres.BytesDeleted, compacted-after)
	}
	if !strings.Contains(vres.Table, "file://") {
		t.Errorf("table %s", vres.Table)
	}
}
