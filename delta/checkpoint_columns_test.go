package delta

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/delta/internal/deltatest"
	"github.com/compactord/compactord/internal/testutil"
)

// Reading chunks column-wise gives the actions reading them row by row
// gives, on every parquet checkpoint and sidecar of the test tables
// (Spark's, delta-rs's, kernel's: struct stats, parsed partition values,
// DVs, multi-part, V2) and on ours, whatever the chunk size.
func TestCheckpointColumnsMatchRows(t *testing.T) {
	var files []string
	err := filepath.WalkDir(testutil.DeltaTestdata(t), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(p, "_delta_log") && strings.HasSuffix(p, ".parquet") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	deltatest.WriteBenchTable(t, dir, 300)
	files = append(files, filepath.Join(dir, "_delta_log", "00000000000000000100.checkpoint.parquet"))
	if len(files) < 10 {
		t.Fatalf("found %d checkpoint files", len(files))
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, chunk := range []int64{3, 64, 1 << 30} {
			rows, rerr := parseCheckpointChunksBy(data, chunk, false)
			cols, cerr := parseCheckpointChunksBy(data, chunk, true)
			if (rerr == nil) != (cerr == nil) || !reflect.DeepEqual(rows, cols) {
				t.Fatalf("%s, chunks of %d rows: column-wise read differs from row-wise (%v / %v)", p, chunk, cerr, rerr)
			}
		}
	}
}

// A chunk of add and remove rows is read column-wise, the rows of other
// actions one by one by the row reader; a chunk of more such rows than
// the plan allows is left to the row reader whole.
func TestCheckpointColumnsRead(t *testing.T) {
	dir := t.TempDir()
	deltatest.WriteBenchTable(t, dir, 300)
	data, err := os.ReadFile(filepath.Join(dir, "_delta_log", "00000000000000000100.checkpoint.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	root, err := compileNode(f.Schema(), nil, f.Schema(), 0)
	if err != nil {
		t.Fatal(err)
	}
	cs := compileCheckpoint(root)
	cs.ncols, cs.columns = len(f.Schema().Columns()), cs.planColumns(f.Schema())
	rg := f.RowGroups()[0]
	// Rows 0 and 1 are protocol and metaData.
	for _, tt := range []struct {
		start, end int64
		maxOthers  int
		done       bool
	}{{0, 10, 16, true}, {1, 3, 16, true}, {0, 10, 2, true}, {0, 10, 1, false}, {1, 3, 0, false}, {2, 40, 0, true}, {250, rg.NumRows(), 16, true}} {
		cs.columns.maxOthers = tt.maxOthers
		acts, done, err := readColumnRange(rg, tt.start, tt.end, cs, cpActions{files: make([]fileEntry, 0, tt.end-tt.start)})
		if err != nil || done != tt.done {
			t.Fatalf("rows %d..%d: done %v, %v; want done %v", tt.start, tt.end, done, err, tt.done)
		}
		if !done {
			continue
		}
		want, err := readRowRange(rg, tt.start, tt.end, cs, cpActions{files: make([]fileEntry, 0, tt.end-tt.start)})
		others := int64(len(want.others))
		if err != nil || !reflect.DeepEqual(acts, want) || int64(len(acts.files))+others != tt.end-tt.start {
			t.Fatalf("rows %d..%d: %d actions column-wise, %d row-wise (%v)", tt.start, tt.end, len(acts.files), len(want.files), err)
		}
	}
}
