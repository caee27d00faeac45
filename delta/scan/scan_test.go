package scan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/internal/deltatest"
	deltaschema "github.com/compactord/compactord/delta/schema"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/parquet-go/parquet-go"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/memblob"
)

// copyDataFile copies one data file of a test table into dir and returns
// its add action (same name, size of the copy).
func copyDataFile(t *testing.T, table, dir string) (*delta.Snapshot, *actions.Add) {
	t.Helper()
	root := testutil.DeltaTable(t, table)
	snap := loadTestSnapshot(t, root)
	a := *snap.Files[0]
	a.DeletionVector = nil
	key, err := a.Key()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, key))
	if err != nil {
		t.Fatal(err)
	}
	a.Path = "data.parquet"
	a.Size = int64(len(b))
	if err := os.WriteFile(filepath.Join(dir, a.Path), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return snap, &a
}

func readAll(s *FileScan) (int, error) {
	rows := make([]parquet.Row, 4)
	total := 0
	for {
		n, err := s.ReadRows(rows, nil)
		total += n
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

func TestScanBadInputNamesTheFile(t *testing.T) {
	ctx := context.Background()
	t.Run("missing data file", func(t *testing.T) {
		dir := t.TempDir()
		snap, a := copyDataFile(t, "dv-small", dir)
		a.Path = "part-00000-gone.snappy.parquet"
		_, err := OpenFileScan(ctx, openScanTable(t, dir), snap, a, ScanOptions{})
		if err == nil || !strings.Contains(err.Error(), "part-00000-gone.snappy.parquet") || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("err = %v", err)
		}
		a.Size = 0 // size from the object's attributes: same error
		_, err = OpenFileScan(ctx, openScanTable(t, dir), snap, a, ScanOptions{})
		if err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("truncated parquet", func(t *testing.T) {
		dir := t.TempDir()
		snap, a := copyDataFile(t, "dv-small", dir)
		p := filepath.Join(dir, a.Path)
		b, _ := os.ReadFile(p)
		for _, cut := range []int{len(b) / 2, len(b) - 9, 5} {
			if err := os.WriteFile(p, b[:cut], 0o644); err != nil {
				t.Fatal(err)
			}
			a.Size = int64(cut)
			s, err := OpenFileScan(ctx, openScanTable(t, dir), snap, a, ScanOptions{})
			if err == nil {
				_, err = readAll(s)
			}
			if err == nil || !strings.Contains(err.Error(), "data.parquet") {
				t.Fatalf("cut at %d: err = %v", cut, err)
			}
		}
	})
	t.Run("corrupt pages", func(t *testing.T) {
		dir := t.TempDir()
		snap, a := copyDataFile(t, "cm-name", dir)
		p := filepath.Join(dir, a.Path)
		b, _ := os.ReadFile(p)
		// Scramble the column chunks, keep magic and footer.
		for i := 4; i < len(b)/2; i++ {
			b[i] ^= 0x5a
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := OpenFileScan(ctx, openScanTable(t, dir), snap, a, ScanOptions{})
		if err == nil {
			_, err = readAll(s)
		}
		if err == nil || !strings.Contains(err.Error(), "data.parquet") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("size larger than object", func(t *testing.T) {
		dir := t.TempDir()
		snap, a := copyDataFile(t, "dv-small", dir)
		a.Size += 100
		s, err := OpenFileScan(ctx, openScanTable(t, dir), snap, a, ScanOptions{})
		if err == nil {
			_, err = readAll(s)
		}
		if err == nil || !strings.Contains(err.Error(), "data.parquet") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestScanDeletionVectors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		rows    []uint64
		card    int64
		want    int
		wantErr string
	}{
		{name: "first and last rows", rows: []uint64{0, 9}, card: 2, want: 8},
		{name: "all rows", rows: []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, card: 10, want: 0},
		{name: "index past the row count", rows: []uint64{3, 10}, card: 2, wantErr: "deletes a row past the end of the file (10 rows)"},
		{name: "cardinality mismatch", rows: []uint64{3}, card: 2, wantErr: "does not match the descriptor's cardinality (2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			snap, a := copyDataFile(t, "dv-small", dir)
			tb := openScanTable(t, dir)
			descs, err := delta.WriteDV(ctx, tb, "", []*roaring64.Bitmap{roaring64.BitmapOf(tc.rows...)})
			if err != nil {
				t.Fatal(err)
			}
			a.DeletionVector = descs[0]
			a.DeletionVector.Cardinality = tc.card
			s, err := OpenFileScan(ctx, tb, snap, a, ScanOptions{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "data.parquet") {
					t.Fatalf("err = %v, want %q naming the file", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rows := make([]parquet.Row, 3)
			idx := make([]int64, 3)
			var got []int64
			for {
				n, err := s.ReadRows(rows, idx)
				got = append(got, idx[:n]...)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if len(got) != tc.want {
				t.Fatalf("%d live rows, want %d", len(got), tc.want)
			}
			deleted := roaring64.BitmapOf(tc.rows...)
			for i, p := range got {
				if deleted.Contains(uint64(p)) || (i > 0 && p <= got[i-1]) {
					t.Fatalf("physical indexes %v include a deleted row or are not increasing", got)
				}
			}
		})
	}
}

// TestScanRowsAreOwnedByCaller: rows from one ReadRows call stay intact
// after later calls (parquet-go reuses its buffers).
func TestScanRowsAreOwnedByCaller(t *testing.T) {
	root := testutil.DeltaTable(t, "stats-writing-all-types")
	snap := loadTestSnapshot(t, root)
	tb := openScanTable(t, root)
	s, err := OpenFileScan(context.Background(), tb, snap, snap.Files[0], ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var kept []parquet.Row
	var snapshots []string
	buf := make([]parquet.Row, 1)
	for {
		n, err := s.ReadRows(buf, nil)
		if n == 1 {
			kept = append(kept, buf[0])
			snapshots = append(snapshots, fmt.Sprint(buf[0].Clone()))
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(kept) != 4 {
		t.Fatalf("%d rows", len(kept))
	}
	for i, r := range kept {
		if fmt.Sprint(r) != snapshots[i] {
			t.Fatalf("row %d changed after later reads:\n%s\n%s", i, r, snapshots[i])
		}
	}
}

// TestScanSchemaEvolution reads a file written before columns were added
// (also inside a struct), with required columns in the file and nullable
// ones in the table: absent columns read as null exactly where their
// parent exists; columns the table does not have are dropped.
func TestScanSchemaEvolution(t *testing.T) {
	type inner struct {
		A int32 `parquet:"a"`
	}
	type oldRow struct {
		ID int64  `parquet:"id"`
		S  *inner `parquet:"s,optional"`
		// CDF writers may leave _change_type in data files: dropped.
		ChangeType string `parquet:"_change_type"`
	}
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "old.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[oldRow](f)
	if _, err := w.Write([]oldRow{{ID: 1, S: &inner{A: 7}, ChangeType: "insert"}, {ID: 2, ChangeType: "update_postimage"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	schema := `{"type":"struct","fields":[
	 {"name":"id","type":"long","nullable":true,"metadata":{}},
	 {"name":"s","type":{"type":"struct","fields":[
	   {"name":"a","type":"long","nullable":true,"metadata":{}},
	   {"name":"b","type":"string","nullable":true,"metadata":{}},
	   {"name":"l","type":{"type":"array","elementType":"integer","containsNull":true},"nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
	 {"name":"m","type":{"type":"map","keyType":"string","valueType":"double","valueContainsNull":true},"nullable":true,"metadata":{}},
	 {"name":"p","type":"date","nullable":true,"metadata":{}}]}`
	st, err := deltaschema.ParseSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	snap := &delta.Snapshot{Schema: st, Metadata: actions.Metadata{SchemaString: schema, PartitionColumns: []string{"p"}}}
	p := "2024-02-29"
	add := &actions.Add{Path: "old.parquet", PartitionValues: map[string]*string{"p": &p}}
	got := scanOneFile(t, openScanTable(t, dir), snap, add)
	want := []string{
		`{"id":1,"s":{"a":7,"b":null,"l":null},"m":null,"p":"2024-02-29"}`,
		`{"id":2,"s":null,"m":null,"p":"2024-02-29"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A table that says s.a is required cannot read a file without it.
	st.Fields[1].Type.Struct.Fields[1].Nullable = false
	if _, err := OpenFileScan(context.Background(), openScanTable(t, dir), snap, add, ScanOptions{}); err == nil || !strings.Contains(err.Error(), "s.b") {
		t.Fatalf("required column absent: err = %v", err)
	}
	// A type the file cannot be widened to is refused, naming the column.
	st.Fields[1].Type.Struct.Fields[1].Nullable = true
	st.Fields[0].Type = &deltaschema.DataType{Name: "string"}
	if _, err := OpenFileScan(context.Background(), openScanTable(t, dir), snap, add, ScanOptions{}); err == nil || !strings.Contains(err.Error(), "column id") {
		t.Fatalf("incompatible type: err = %v", err)
	}
}

func scanOneFile(t *testing.T, tb *delta.Table, snap *delta.Snapshot, add *actions.Add) []string {
	t.Helper()
	s, err := OpenFileScan(context.Background(), tb, snap, add, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dec, err := NewRowDecoder(snap, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	pv, err := dec.PartitionValues(add)
	if err != nil {
		t.Fatal(err)
	}
	return scanJSON(t, s, dec, pv, 2, nil)
}

func TestParsePartitionValue(t *testing.T) {
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Fatal(err)
	}
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		typ     string
		in      *string
		loc     *time.Location
		want    string
		wantErr bool
	}{
		{typ: "string", in: nil, want: "null"},
		{typ: "string", in: str(""), want: "null"},
		{typ: "string", in: str("__HIVE_DEFAULT_PARTITION__"), want: "null"},
		{typ: "string", in: str("null"), want: `"null"`},
		{typ: "string", in: str("A/A"), want: `"A/A"`},
		{typ: "integer", in: str("-12"), want: "-12"},
		{typ: "byte", in: str("128"), wantErr: true},
		{typ: "long", in: str("9223372036854775807"), want: "9223372036854775807"},
		{typ: "boolean", in: str("true"), want: "true"},
		{typ: "boolean", in: str("yes"), wantErr: true},
		{typ: "double", in: str("0.0"), want: "0"},
		{typ: "double", in: str("NaN"), want: `"NaN"`},
		{typ: "float", in: str("1.5"), want: "1.5"},
		{typ: "date", in: str("2021-09-08"), want: `"2021-09-08"`},
		{typ: "date", in: str("1969-12-31"), want: `"1969-12-31"`},
		{typ: "timestamp", in: str("2021-09-08 11:11:11"), want: `"2021-09-08T11:11:11.000000Z"`},
		{typ: "timestamp", in: str("2021-09-08 11:11:11"), loc: la, want: `"2021-09-08T18:11:11.000000Z"`},
		{typ: "timestamp", in: str("2021-09-08 11:11:11.123456"), want: `"2021-09-08T11:11:11.123456Z"`},
		{typ: "timestamp", in: str("1970-01-01T00:00:00.000000Z"), loc: la, want: `"1970-01-01T00:00:00.000000Z"`},
		{typ: "timestamp", in: str("2024-01-01T10:00:00.000000+02:00"), want: `"2024-01-01T08:00:00.000000Z"`},
		{typ: "timestamp_ntz", in: str("2013-07-05 17:01:00.123456"), loc: la, want: `"2013-07-05T17:01:00.123456"`},
		{typ: "timestamp", in: str("yesterday"), wantErr: true},
		{typ: "decimal(5,2)", in: str("-1.5"), want: "-1.50"},
		{typ: "decimal(5,2)", in: str("1.555"), wantErr: true},
		{typ: "decimal(5,2)", in: str("1000"), wantErr: true},
		{typ: "decimal(38,0)", in: str("12345678901234567890123456789012345678"), want: "12345678901234567890123456789012345678"},
		{typ: "binary", in: str("ab"), want: `"YWI="`},
	} {
		dt, err := deltaschema.ParsePrimitive(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		v, err := actions.ParsePartitionValue(tc.in, dt, tc.loc)
		if tc.wantErr {
			if err == nil {
				t.Errorf("%s %q: no error, got %v", tc.typ, *tc.in, v)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.typ, err)
			continue
		}
		if got := string(deltaschema.AppendJSON(nil, v)); got != tc.want {
			t.Errorf("%s %v: got %s, want %s", tc.typ, tc.in, got, tc.want)
		}
	}
}

func TestDecimalBytesAndEncoding(t *testing.T) {
	for p, want := range map[int]int{1: 1, 2: 1, 3: 2, 9: 4, 10: 5, 18: 8, 19: 9, 38: 16} {
		if got := delta.DecimalBytes(p); got != want {
			t.Errorf("decimalBytes(%d) = %d, want %d", p, got, want)
		}
	}
	for _, v := range []int64{0, 1, -1, 127, -128, 255, -256, math.MaxInt64, math.MinInt64} {
		d := deltaschema.Decimal{Unscaled: bytesToBigInt(delta.DecimalToBytes(bigOf(v), 16)), Scale: 0}
		if d.Unscaled.Int64() != v {
			t.Errorf("round trip of %d through 16 bytes gave %s", v, d)
		}
	}
	if got := (deltaschema.Decimal{Unscaled: bigOf(-5), Scale: 3}).String(); got != "-0.005" {
		t.Errorf("Decimal string = %s", got)
	}
}

func bigOf(v int64) *big.Int { return big.NewInt(v) }

// legacyList is a LIST-annotated group with a caller-chosen repeated child,
// to write the legacy list encodings older writers produce.
type legacyList struct {
	parquet.Node // parquet.List(...): provides the LIST annotation
	fields       []parquet.Field
}

func (l *legacyList) Fields() []parquet.Field { return l.fields }

// TestScanLegacyListEncodings reads 2-level lists (repeated primitive named
// "array", repeated group with two fields) and a 3-level list with Hive-era
// names ("bag"/"array"), as older parquet writers produce them.
func TestScanLegacyListEncodings(t *testing.T) {
	twoLevel := &legacyList{Node: parquet.List(parquet.Int(32)), fields: []parquet.Field{
		delta.NamedField("array", parquet.Repeated(parquet.Int(32)))}}
	structElem := &legacyList{Node: parquet.List(parquet.Int(32)), fields: []parquet.Field{
		delta.NamedField("l2_tuple", parquet.Repeated(delta.NewOrderedGroup([]parquet.Field{
			delta.NamedField("a", parquet.Optional(parquet.Int(32))),
			delta.NamedField("b", parquet.Optional(parquet.String())),
		})))}}
	bag := &legacyList{Node: parquet.List(parquet.Int(32)), fields: []parquet.Field{
		delta.NamedField("bag", parquet.Repeated(delta.NewOrderedGroup([]parquet.Field{
			delta.NamedField("array", parquet.Optional(parquet.Int(32))),
		})))}}
	schema := parquet.NewSchema("hive", delta.NewOrderedGroup([]parquet.Field{
		delta.NamedField("id", parquet.Optional(parquet.Int(64))),
		delta.NamedField("l", parquet.Optional(twoLevel)),
		delta.NamedField("l2", parquet.Optional(structElem)),
		delta.NamedField("l3", parquet.Optional(bag)),
	}))
	// Columns: 0 id, 1 l.array (def 2, rep 1), 2 l2.l2_tuple.a (def 3),
	// 3 l2.l2_tuple.b (def 3), 4 l3.bag.array (def 3).
	rows := []parquet.Row{
		{parquet.Int64Value(1).Level(0, 1, 0),
			parquet.Int32Value(1).Level(0, 2, 1), parquet.Int32Value(2).Level(1, 2, 1),
			parquet.Int32Value(5).Level(0, 3, 2), parquet.Value{}.Level(1, 2, 2),
			parquet.ByteArrayValue([]byte("x")).Level(0, 3, 3), parquet.ByteArrayValue([]byte("y")).Level(1, 3, 3),
			parquet.Int32Value(7).Level(0, 3, 4), parquet.Value{}.Level(1, 2, 4)},
		{parquet.Int64Value(2).Level(0, 1, 0),
			parquet.Value{}.Level(0, 0, 1),
			parquet.Value{}.Level(0, 1, 2), parquet.Value{}.Level(0, 1, 3),
			parquet.Value{}.Level(0, 0, 4)},
	}
	dir := t.TempDir()
	data := deltatest.WriteParquetFile(t, dir, "hive.parquet", schema, rows)
	t.Logf("%s", openParquetBytes(t, data).Schema())
	ds := `{"type":"struct","fields":[
	 {"name":"id","type":"long","nullable":true,"metadata":{}},
	 {"name":"l","type":{"type":"array","elementType":"integer","containsNull":false},"nullable":true,"metadata":{}},
	 {"name":"l2","type":{"type":"array","elementType":{"type":"struct","fields":[
	   {"name":"a","type":"integer","nullable":true,"metadata":{}},
	   {"name":"b","type":"string","nullable":true,"metadata":{}}]},"containsNull":true},"nullable":true,"metadata":{}},
	 {"name":"l3","type":{"type":"array","elementType":"integer","containsNull":true},"nullable":true,"metadata":{}}]}`
	st, err := deltaschema.ParseSchema(ds)
	if err != nil {
		t.Fatal(err)
	}
	snap := &delta.Snapshot{Schema: st, Metadata: actions.Metadata{SchemaString: ds}}
	got := scanOneFile(t, openScanTable(t, dir), snap, &actions.Add{Path: "hive.parquet"})
	want := []string{
		`{"id":1,"l":[1,2],"l2":[{"a":5,"b":"x"},{"a":null,"b":"y"}],"l3":[7,null]}`,
		`{"id":2,"l":null,"l2":[],"l3":null}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func openParquetBytes(t *testing.T, b []byte) *parquet.File {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestScanDVAcrossRowGroups: physical indexes continue across row groups
// and batches, and the DV removes exactly its rows (the id column equals
// the physical index in this file).
func TestScanDVAcrossRowGroups(t *testing.T) {
	ds := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},{"name":"s","type":"string","nullable":true,"metadata":{}}]}`
	st, err := deltaschema.ParseSchema(ds)
	if err != nil {
		t.Fatal(err)
	}
	snap := &delta.Snapshot{Schema: st, Metadata: actions.Metadata{SchemaString: ds}}
	schema, err := DataSchema(snap)
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	var rows []parquet.Row
	for i := 0; i < n; i++ {
		s := parquet.Value{}.Level(0, 0, 1)
		if i%3 != 0 {
			s = parquet.ByteArrayValue([]byte(fmt.Sprintf("row-%d", i))).Level(0, 1, 1)
		}
		rows = append(rows, parquet.Row{parquet.Int64Value(int64(i)).Level(0, 0, 0), s})
	}
	dir := t.TempDir()
	data := deltatest.WriteParquetFile(t, dir, "f.parquet", schema, rows, parquet.MaxRowsPerRowGroup(97))
	if got := len(openParquetBytes(t, data).RowGroups()); got < 10 {
		t.Fatalf("%d row groups, want many", got)
	}
	dv := roaring64.New()
	for i := uint64(0); i < n; i += 7 {
		dv.Add(i)
	}
	dv.AddRange(96, 200) // a range spanning a row group boundary
	dv.Add(n - 1)
	for _, batch := range []int{1, 13, 97, 4096} {
		s, err := OpenFileScan(context.Background(), openScanTable(t, dir), snap, &actions.Add{Path: "f.parquet", Size: int64(len(data))}, ScanOptions{DV: dv, ReuseRows: batch == 13})
		if err != nil {
			t.Fatal(err)
		}
		rows := make([]parquet.Row, batch)
		idx := make([]int64, batch)
		next := int64(0)
		count := 0
		for {
			k, err := s.ReadRows(rows, idx)
			for i := 0; i < k; i++ {
				for dv.Contains(uint64(next)) {
					next++
				}
				if idx[i] != next || rows[i][0].Int64() != next {
					t.Fatalf("batch %d: row %d has index %d and id %d, want %d", batch, count, idx[i], rows[i][0].Int64(), next)
				}
				if want := fmt.Sprintf("row-%d", next); next%3 != 0 && string(rows[i][1].ByteArray()) != want {
					t.Fatalf("batch %d: row %d string %q, want %q", batch, next, rows[i][1].ByteArray(), want)
				}
				next++
				count++
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		if want := n - int(dv.GetCardinality()); count != want {
			t.Fatalf("batch %d: %d rows, want %d", batch, count, want)
		}
	}
}

func TestColumnBufferSize(t *testing.T) {
	for _, tc := range []struct {
		cols int
		size int64
		want int
	}{
		{cols: 7, size: 100 << 20, want: 4 << 20},
		{cols: 100, size: 1 << 30, want: 512 << 10},
		{cols: 10, size: 1 << 20, want: 64 << 10},
		{cols: 4, size: 3 << 20, want: 64 << 10}, // fetched whole: small buffers
		{cols: 4, size: 20 << 20, want: 4 << 20},
		{cols: 8, size: 12 << 20, want: 1 << 20},
		{cols: 3, size: 0, want: 4 << 20},
	} {
		if got := ColumnBufferSize(DefaultReadBufferSize, tc.cols, tc.size); got != tc.want {
			t.Errorf("ColumnBufferSize(%d, %d) = %d, want %d", tc.cols, tc.size, got, tc.want)
		}
	}
}

// TestScanThroughMemBucket reads a data file through another blob driver
// (mem://): the scan only uses ranged reads of the bucket.
func TestScanThroughMemBucket(t *testing.T) {
	ctx := context.Background()
	root := testutil.DeltaTable(t, "dv-small")
	snap := loadTestSnapshot(t, root)
	src := openScanTable(t, root)
	bucket, err := blob.OpenBucket(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer bucket.Close()
	mem := &delta.Table{URL: "mem://", Bucket: bucket}
	for _, a := range snap.Files {
		key, _ := a.Key()
		b, err := src.Bucket.ReadAll(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if err := bucket.WriteAll(ctx, key, b, nil); err != nil {
			t.Fatal(err)
		}
		if a.DeletionVector != nil && a.DeletionVector.StorageType == "u" {
			dvs, _ := src.Bucket.List(&blob.ListOptions{Prefix: "deletion_vector_"}).Next(ctx)
			if dvs != nil {
				d, err := src.Bucket.ReadAll(ctx, dvs.Key)
				if err != nil {
					t.Fatal(err)
				}
				if err := bucket.WriteAll(ctx, dvs.Key, d, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	got := scanLogicalRows(t, mem, snap, time.UTC)
	want := scanLogicalRows(t, src, snap, time.UTC)
	if strings.Join(got, "\n") != strings.Join(want, "\n") || len(got) != 8 {
		t.Fatalf("mem:// scan gave %v, file:// gave %v", got, want)
	}
}

// TestScanUnannotatedRepeatedField reads a bare repeated field (protobuf
// style, no LIST annotation) as an array, and refuses it as a scalar.
func TestScanUnannotatedRepeatedField(t *testing.T) {
	schema := parquet.NewSchema("pb", delta.NewOrderedGroup([]parquet.Field{
		delta.NamedField("id", parquet.Required(parquet.Int(64))),
		delta.NamedField("r", parquet.Repeated(parquet.Int(32))),
	}))
	rows := []parquet.Row{
		{parquet.Int64Value(1).Level(0, 0, 0), parquet.Int32Value(4).Level(0, 1, 1), parquet.Int32Value(5).Level(1, 1, 1)},
		{parquet.Int64Value(2).Level(0, 0, 0), parquet.Value{}.Level(0, 0, 1)},
	}
	dir := t.TempDir()
	deltatest.WriteParquetFile(t, dir, "pb.parquet", schema, rows)
	ds := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},
	 {"name":"r","type":{"type":"array","elementType":"integer","containsNull":true},"nullable":true,"metadata":{}}]}`
	st, err := deltaschema.ParseSchema(ds)
	if err != nil {
		t.Fatal(err)
	}
	snap := &delta.Snapshot{Schema: st, Metadata: actions.Metadata{SchemaString: ds}}
	got := scanOneFile(t, openScanTable(t, dir), snap, &actions.Add{Path: "pb.parquet"})
	if want := `{"id":1,"r":[4,5]}` + "\n" + `{"id":2,"r":[]}`; strings.Join(got, "\n") != want {
		t.Fatalf("got %v, want %s", got, want)
	}
	st.Fields[1].Type = &deltaschema.DataType{Name: "integer"}
	if _, err := OpenFileScan(context.Background(), openScanTable(t, dir), snap, &actions.Add{Path: "pb.parquet"}, ScanOptions{}); err == nil || !strings.Contains(err.Error(), "repeated in the file") {
		t.Fatalf("err = %v", err)
	}
}
