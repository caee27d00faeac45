package vacuum

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

// A copy of a Spark-written table whose tombstones expired long ago: the
// removed files the copy brought along are newer than the cutoff (their
// modification time is the copy's), as is an orphan written just now. A
// full vacuum deletes none of them, and says so: every one is counted as
// protected until the first leaves the retention, and a vacuum past then
// deletes exactly those.
func TestAFullVacuumCountsUnreferencedFilesTooNewToDeleteAsProtected(t *testing.T) {
	ctx := context.Background()
	root := testutil.CopyDeltaTable(t, "small-files-merge-update-delete")
	if err := os.WriteFile(filepath.Join(root, "part-99999-orphan-c000.snappy.parquet"), []byte("never committed"), 0o644); err != nil {
		t.Fatal(err)
	}
	tbl := tabletest.Open(t, root)
	snap := tabletest.Latest(t, tbl)
	live := map[string]bool{}
	for _, f := range snap.Files {
		live[f.Path] = true
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var unneeded int64
	oldest := time.Now()
	for _, e := range ents {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || strings.HasPrefix(e.Name(), "_") || live[e.Name()] {
			continue
		}
		unneeded++
		if info, err := e.Info(); err == nil && info.ModTime().Before(oldest) {
			oldest = info.ModTime()
		}
	}
	if unneeded < 2 {
		t.Fatalf("the copy has %d files no version needs; the test needs removed files and the orphan", unneeded)
	}
	now := time.Now()
	res, err := Run(ctx, tbl, Options{Mode: Full, DryRun: true, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesToDelete != 0 || res.ProtectedFiles != unneeded || res.ProtectedUnreferenced != unneeded {
		t.Fatalf("to delete %d, protected %d (%d unreferenced); want 0 and all %d files no version needs",
			res.FilesToDelete, res.ProtectedFiles, res.ProtectedUnreferenced, unneeded)
	}
	if want := oldest.Add(7 * 24 * time.Hour).Truncate(time.Millisecond); res.ProtectedUntil == nil || !res.ProtectedUntil.Equal(want.UTC()) {
		t.Errorf("protected until %v, want %v (the oldest of them plus the 7d retention)", res.ProtectedUntil, want)
	}
	later := res.ProtectedUntil.Add(time.Hour * 24)
	res, err = Run(ctx, tbl, Options{Mode: Full, DryRun: true, Now: func() time.Time { return later }})
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesToDelete != unneeded || res.ProtectedFiles != 0 {
		t.Fatalf("past the retention: to delete %d, protected %d; want %d and 0", res.FilesToDelete, res.ProtectedFiles, unneeded)
	}
}
