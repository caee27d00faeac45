package writer

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go/compress"

	"github.com/compactord/compactord/bench/gen"
	"github.com/compactord/compactord/delta"
)

// loadLatest loads the table's latest snapshot with the Delta core.
func loadLatest(ctx context.Context, tbl *delta.Table) (*delta.Snapshot, error) {
	return delta.LoadSnapshot(ctx, tbl, -1)
}

// generatedTable generates a table of about total bytes in files of lo..hi
// bytes under a temp directory (bench/gen with seed and codec; nil: gen's
// default), opens it for the rest of the test and loads its latest
// snapshot. dir is the table's directory.
func generatedTable(t testing.TB, total, lo, hi int64, seed uint64, codec compress.Codec) (dir string, tbl *delta.Table, snap *delta.Snapshot) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "t")
	if err := gen.Generate(dir, total, lo, hi, seed, codec); err != nil {
		t.Fatal(err)
	}
	tbl, snap = openTable(t, dir)
	return dir, tbl, snap
}

// openTable opens the table at dir for the rest of the test and loads its
// latest snapshot.
func openTable(t testing.TB, dir string) (*delta.Table, *delta.Snapshot) {
	t.Helper()
	tbl, err := delta.OpenTable(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.Close() })
	snap, err := loadLatest(context.Background(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	return tbl, snap
}
