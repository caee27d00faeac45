package delta

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/delta/internal/deltatest"
	"github.com/compactord/compactord/internal/testutil"
)

// A multi-part checkpoint whose second part holds only txn actions (as
// delta-kernel-rs writes them) loads, and the txn in that part counts.
func TestACheckpointPartMayHoldOnlyTxnActions(t *testing.T) {
	dir := deltatest.CopyTableDir(t, testutil.DeltaTable(t, "ckpt-app-txn"), func(rel string) bool {
		return rel == "_delta_log/_last_checkpoint"
	})
	logDir := filepath.Join(dir, "_delta_log")
	// The classic checkpoint becomes part 1 of 2 ...
	if err := os.Rename(filepath.Join(logDir, "00000000000000000001.checkpoint.parquet"),
		filepath.Join(logDir, "00000000000000000001.checkpoint.0000000001.0000000002.parquet")); err != nil {
		t.Fatal(err)
	}
	// ... and part 2 has a txn column and nothing else.
	type txn struct {
		AppID       string `parquet:"appId"`
		Version     int64  `parquet:"version"`
		LastUpdated *int64 `parquet:"lastUpdated,optional"`
	}
	type row struct {
		Txn *txn `parquet:"txn,optional"`
	}
	f, err := os.Create(filepath.Join(logDir, "00000000000000000001.checkpoint.0000000002.0000000002.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[row](f)
	if _, err := w.Write([]row{{Txn: &txn{AppID: "part-two-app", Version: 42}}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	want, err := LoadSnapshot(context.Background(), openDir(t, testutil.DeltaTable(t, "ckpt-app-txn")), -1)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := LoadSnapshot(context.Background(), openDir(t, dir), -1)
	if err != nil {
		t.Fatal(err)
	}
	if got := snap.Txns["part-two-app"]; got.Version != 42 {
		t.Fatalf("txn of part 2 = %+v, want version 42 (txns %v)", got, snap.Txns)
	}
	if len(snap.Files) != len(want.Files) || len(snap.Txns) != len(want.Txns)+1 {
		t.Fatalf("%d files, %d txns; want %d files, %d txns", len(snap.Files), len(snap.Txns), len(want.Files), len(want.Txns)+1)
	}
}

// A table whose unsupported reader feature brings a type this build cannot
// parse is refused naming the feature, not with a schema error.
func TestAnUnparsableSchemaOfAnUnsupportedFeatureNamesTheFeature(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	log := `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["geospatial"],"writerFeatures":["geospatial"]}}
{"metaData":{"id":"g","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"geom\",\"type\":\"geometry(OGC:CRS84)\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":[],"configuration":{},"createdTime":1}}
`
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", "00000000000000000000.json"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadSnapshot(context.Background(), openDir(t, dir), -1)
	var fe *UnsupportedFeatureError
	if !errors.As(err, &fe) || fe.Feature != "geospatial" {
		t.Fatalf("err = %v, want an UnsupportedFeatureError naming geospatial", err)
	}
}
