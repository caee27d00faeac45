package writer

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/compactord/compactord/bench/gen"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/attempt"
)

// TestWithDictionariesKeepsTheSchema marks some leaves of a nested schema
// (fields out of name order, optional and required, with field ids)
// dictionary-encoded and checks that only their encoding changed: the same
// columns in the same order, levels, types and ids.
func TestWithDictionariesKeepsTheSchema(t *testing.T) {
	schema := parquet.NewSchema("t", delta.NewOrderedGroup([]parquet.Field{
		delta.NamedField("zeta", parquet.FieldID(parquet.Optional(parquet.Leaf(parquet.Int64Type)), 7)),
		delta.NamedField("alpha", parquet.String()),
		delta.NamedField("meta", parquet.Optional(delta.NewOrderedGroup([]parquet.Field{
			delta.NamedField("source", parquet.Optional(parquet.String())),
			delta.NamedField("version", parquet.Optional(parquet.Leaf(parquet.Int32Type))),
		}))),
		delta.NamedField("day", parquet.Optional(parquet.Date())),
	}))
	for _, dict := range [][]bool{{false, true, false, true, true}, {true, false, true, false, false}} {
		got := withDictionaries(schema, dict)
		if got == nil {
			t.Fatalf("%v: no schema", dict)
		}
		if !slices.EqualFunc(got.Columns(), schema.Columns(), slices.Equal) {
			t.Fatalf("%v: columns %v, want %v", dict, got.Columns(), schema.Columns())
		}
		for c, p := range schema.Columns() {
			want, _ := schema.Lookup(p...)
			leaf, _ := got.Lookup(p...)
			if leaf.ColumnIndex != want.ColumnIndex || leaf.MaxDefinitionLevel != want.MaxDefinitionLevel ||
				leaf.MaxRepetitionLevel != want.MaxRepetitionLevel || leaf.Node.ID() != want.Node.ID() ||
				leaf.Node.Optional() != want.Node.Optional() || leaf.Node.Type().String() != want.Node.Type().String() {
				t.Fatalf("%v: column %v changed: %+v, want %+v", dict, p, leaf, want)
			}
			enc := leaf.Node.Encoding()
			if isDict := enc != nil && enc.Encoding() == format.RLEDictionary; isDict != dict[c] {
				t.Errorf("%v: column %v encoding %v", dict, p, enc)
			}
		}
	}
	if withDictionaries(schema, make([]bool, 5)) != nil {
		t.Error("a schema with no column marked: not nil")
	}
}

// TestDictionaryChunk: only chunks whose data pages are all dictionary
// indexes count as dictionary-encoded, by their page encoding statistics
// when they have them, else by their encodings.
func TestDictionaryChunk(t *testing.T) {
	stat := func(pt format.PageType, e format.Encoding, n int32) format.PageEncodingStats {
		return format.PageEncodingStats{PageType: pt, Encoding: e, Count: n}
	}
	tests := []struct {
		encs  []format.Encoding
		stats []format.PageEncodingStats
		want  bool
	}{
		{encs: []format.Encoding{format.PlainDictionary}, want: true},
		{encs: []format.Encoding{format.RLE, format.RLEDictionary}, want: true},
		{encs: []format.Encoding{format.PlainDictionary, format.RLE, format.BitPacked}, want: true},
		{encs: []format.Encoding{format.PlainDictionary, format.Plain}, want: false}, // fell back to plain, maybe
		{encs: []format.Encoding{format.RLE, format.DeltaLengthByteArray}, want: false},
		{encs: []format.Encoding{format.RLE}, want: false},
		{want: false},
		{encs: []format.Encoding{format.Plain, format.RLE, format.RLEDictionary},
			stats: []format.PageEncodingStats{stat(format.DictionaryPage, format.Plain, 1), stat(format.DataPage, format.RLEDictionary, 9)}, want: true},
		{encs: []format.Encoding{format.Plain, format.RLE, format.RLEDictionary},
			stats: []format.PageEncodingStats{stat(format.DictionaryPage, format.Plain, 1), stat(format.DataPage, format.RLEDictionary, 9), stat(format.DataPage, format.Plain, 2)}, want: false},
		{encs: []format.Encoding{format.Plain},
			stats: []format.PageEncodingStats{stat(format.DictionaryPage, format.Plain, 1)}, want: false},
	}
	for _, tt := range tests {
		md := &format.ColumnMetaData{Encoding: tt.encs, EncodingStats: tt.stats}
		if got := dictionaryChunk(md); got != tt.want {
			t.Errorf("dictionaryChunk(%v, %v) = %v, want %v", tt.encs, tt.stats, got, tt.want)
		}
	}
}

// TestSortedRewriteKeepsSmallDictionaryColumns rewrites, sorted into one
// output on the column path, sources whose low-cardinality columns are
// dictionary-encoded (their other columns plain): those columns come out
// dictionary-encoded, except one whose values are too many, the others
// plain, and every row is its source row
// (checkSorted).
func TestSortedRewriteKeepsSmallDictionaryColumns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	if err := gen.Generate(dir, 3<<20, 256<<10, 512<<10, 11, nil); err != nil {
		t.Fatal(err)
	}
	// name, category, meta.source and meta.version dictionary-encoded in
	// the sources; name, distinct in nearly every row, is far over the
	// bound per row and stays plain.
	dictionaryEncodeSources(t, dir, []bool{4: true, 5: true, 9: true, 10: true, 11: false})
	wantDict := []bool{5: true, 9: true, 10: true, 11: false}
	ctx := context.Background()
	tbl, snap := openTable(t, dir)
	job := &Job{ID: "d", Sources: snap.Files, Sort: &SortSpec{Columns: [][]string{{"event_time"}, {"amount"}}, Curve: "hilbert"},
		Tags: map[string]string{"ZCUBE_ID": "z"}, ClusteringProvider: "liquid"}
	opts := DefaultOptions()
	opts.TargetFileSize = 1 << 30
	objs := &attempt.Objects{}
	res, err := Rewrite(ctx, tbl, snap, job, objs, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Origins.Close() }()
	if !res.Sort.Columnar || res.Sort.DictionaryColumns != 3 || len(res.Outputs) != 1 {
		t.Fatalf("sort %+v, %d outputs: want the column path, 3 dictionary columns, one output", res.Sort, len(res.Outputs))
	}
	checkSorted(t, tbl, snap, job, res)
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(res.Outputs[0].Key)))
	if err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for _, rg := range f.Metadata().RowGroups {
		for c, cc := range rg.Columns {
			if got := slices.Contains(cc.MetaData.Encoding, format.RLEDictionary); got != wantDict[c] {
				t.Errorf("column %v: encodings %v, dictionary-encoded %v, want %v", cc.MetaData.PathInSchema, cc.MetaData.Encoding, got, wantDict[c])
			}
		}
	}
}

// dictionaryEncodeSources writes every data file of the table at dir again
// with the columns dict marks dictionary-encoded, and the log's sizes
// updated.
func dictionaryEncodeSources(t *testing.T, dir string, dict []bool) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if err != nil || len(files) < 2 {
		t.Fatalf("%d files, %v", len(files), err)
	}
	logPath := filepath.Join(dir, "_delta_log", "00000000000000000000.json")
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		w := parquet.NewWriter(&out, withDictionaries(f.Schema(), dict), parquet.Compression(&parquet.Snappy))
		if _, err := parquet.CopyRows(w, parquet.NewReader(f)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		old := fmt.Sprintf(`"path":%q,"size":%d,`, filepath.Base(path), len(data))
		if !bytes.Contains(log, []byte(old)) {
			t.Fatalf("no add of %s in the log", old)
		}
		log = bytes.Replace(log, []byte(old), fmt.Appendf(nil, `"path":%q,"size":%d,`, filepath.Base(path), out.Len()), 1)
	}
	if err := os.WriteFile(logPath, log, 0o644); err != nil {
		t.Fatal(err)
	}
}
