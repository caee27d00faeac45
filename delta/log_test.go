package delta

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/compactord/compactord/delta/internal/deltatest"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/testutil"
)

func TestReadCommitLatestVersionHasNewer(t *testing.T) {
	ctx := context.Background()
	tbl := openDir(t, testutil.DeltaTable(t, "dv-inline-cdf"))
	acts, err := ReadCommit(ctx, tbl, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 2 || acts[0].Remove == nil || acts[1].Add == nil || acts[1].Add.DeletionVector.Cardinality != 1 {
		t.Fatalf("commit 5 = %+v", acts)
	}
	if _, err := ReadCommit(ctx, tbl, 99); !errors.Is(err, logpath.ErrVersionNotFound) {
		t.Fatalf("ReadCommit(99) err = %v, want ErrVersionNotFound", err)
	}
	v, err := LatestVersion(ctx, tbl)
	if err != nil || v != 6 {
		t.Fatalf("LatestVersion = %d, %v; want 6", v, err)
	}
	for _, tt := range []struct {
		v    int64
		want bool
	}{{5, true}, {6, false}, {-1, true}} {
		got, err := HasNewer(ctx, tbl, tt.v)
		if err != nil || got != tt.want {
			t.Errorf("HasNewer(%d) = %v, %v; want %v", tt.v, got, err, tt.want)
		}
	}
	// Cleaned-up history: the caller's version and the next are gone.
	cleaned := deltatest.CopyTableDir(t, testutil.DeltaTable(t, "dv-basic-with-checkpoint"), func(rel string) bool {
		return rel == "_delta_log/"+logName(3) || rel == "_delta_log/"+logName(4)
	})
	if got, err := HasNewer(ctx, openDir(t, cleaned), 3); err != nil || !got {
		t.Errorf("HasNewer(3) after cleanup = %v, %v; want true", got, err)
	}
	if got, err := HasNewer(ctx, openDir(t, cleaned), 46); err != nil || got {
		t.Errorf("HasNewer(46) = %v, %v; want false", got, err)
	}
	// A table whose log holds only checkpoints at the latest version.
	root := deltatest.CopyTableDir(t, testutil.DeltaTable(t, "ckpt-only-domain-metadata-clustering-rowtracking"), nil)
	v, err = LatestVersion(ctx, openDir(t, root))
	if err != nil || v != 108 {
		t.Fatalf("LatestVersion(checkpoint only) = %d, %v", v, err)
	}
	if _, err := LatestVersion(ctx, openDir(t, t.TempDir())); !errors.Is(err, logpath.ErrVersionNotFound) {
		t.Fatalf("LatestVersion(empty) err = %v", err)
	}
}

// Log compaction files are ignored: removing the commits they summarize
// must not let replay silently use them, and their presence must not
// change the state.
func TestLogCompactionFilesAreIgnored(t *testing.T) {
	ctx := context.Background()
	src := testutil.DeltaTable(t, "dbr-optimize-dv-cdc-logcompaction")
	with, err := LoadSnapshot(ctx, openDir(t, src), -1)
	if err != nil {
		t.Fatal(err)
	}
	root := deltatest.CopyTableDir(t, src, func(rel string) bool { return filepath.Ext(rel) == ".json" && len(filepath.Base(rel)) > 30 })
	without, err := LoadSnapshot(ctx, openDir(t, root), -1)
	if err != nil {
		t.Fatal(err)
	}
	compareSnapshots(t, with, without)
	// With a summarized commit gone the table is broken, not silently read
	// from the compaction file.
	os.Remove(filepath.Join(root, "_delta_log", logName(3)))
	os.WriteFile(filepath.Join(root, "_delta_log", "00000000000000000000.00000000000000000005.compacted.json"),
		mustRead(t, filepath.Join(src, "_delta_log", "00000000000000000000.00000000000000000005.compacted.json")), 0o644)
	if _, err := LoadSnapshot(ctx, openDir(t, root), -1); !errors.Is(err, logpath.ErrVersionNotFound) {
		t.Fatalf("err = %v, want a missing-commit error", err)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
