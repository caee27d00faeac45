package scan

import (
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	deltaschema "github.com/compactord/compactord/delta/schema"
	"github.com/compactord/compactord/internal/testutil"
)

// partitionZone is the session zone each table's zone-less timestamp
// partition values were written in (INDEX.md notes).
var partitionZone = map[string]string{"part-values-all-types": "America/Los_Angeles"}

// scanLogicalRows returns the table's live rows as canonical JSON lines,
// through ScanLogicalRows (the code path of `compactord cat`).
func scanLogicalRows(t *testing.T, tb *delta.Table, snap *delta.Snapshot, loc *time.Location) []string {
	t.Helper()
	var out []string
	n, err := ScanLogicalRows(context.Background(), tb, snap, LogicalScanOptions{Location: loc, Scan: ScanOptions{ReuseRows: true}},
		func(_ *actions.Add, row *deltaschema.LogicalStruct) error {
			out = append(out, string(deltaschema.AppendJSON(nil, row)))
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if int(n) != len(out) {
		t.Fatalf("ScanLogicalRows counted %d rows, delivered %d", n, len(out))
	}
	return out
}

// readExpectedRows reads the expected/ parquet files of a test table (logical
// names, partition columns included) as canonical JSON lines, through the
// same type conversion but with no column mapping, no partitions, no DVs.
func readExpectedRows(t *testing.T, dir string, schema *deltaschema.StructType) []string {
	t.Helper()
	ds, err := buildShape(schema.Fields, deltaschema.ColumnMappingNone, false)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := newRowDecoder(ds, &deltaschema.StructType{Fields: ds.fields}, &actions.Metadata{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tb := openScanTable(t, dir)
	files, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	var out []string
	for _, f := range files {
		s, err := openFileScan(context.Background(), tb, ds, &actions.Add{Path: filepath.Base(f)}, ScanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, scanJSON(t, s, dec, nil, 64, nil)...)
		s.Close()
	}
	return out
}

// TestScanEveryTestTable scans the live files of every readable test table:
// the live row count equals expected.json, and where expected/ exists the
// rows equal the expected rows as a multiset.
func TestScanEveryTestTable(t *testing.T) {
	tables := testutil.ExpectedTables(t)
	names := slices.Sorted(maps.Keys(tables))
	checked := 0
	for _, name := range names {
		exp := tables[name]
		if !exp.Readable() {
			continue
		}
		t.Run(name, func(t *testing.T) {
			root := testutil.DeltaTable(t, name)
			snap := loadTestSnapshot(t, root)
			if snap.Version != exp.Version || len(snap.Files) != exp.LiveFiles {
				t.Fatalf("snapshot version %d with %d files, want %d with %d", snap.Version, len(snap.Files), exp.Version, exp.LiveFiles)
			}
			loc := time.UTC
			if z, ok := partitionZone[name]; ok {
				var err error
				if loc, err = time.LoadLocation(z); err != nil {
					t.Fatal(err)
				}
			}
			got := scanLogicalRows(t, openScanTable(t, root), snap, loc)
			if int64(len(got)) != exp.LiveRows {
				t.Errorf("scanned %d live rows, want %d", len(got), exp.LiveRows)
			}
			checked++
			if !exp.HasExpectedDir {
				return
			}
			want := readExpectedRows(t, filepath.Join(filepath.Dir(root), "expected"), snap.Schema)
			sort.Strings(got)
			sort.Strings(want)
			if len(got) != len(want) {
				t.Fatalf("%d rows, expected/ has %d", len(got), len(want))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("row %d differs:\n got %s\nwant %s", i, got[i], want[i])
				}
			}
		})
	}
	if checked < 40 {
		t.Errorf("only %d tables scanned", checked)
	}
}

// TestScanKnownAnswers checks values stated in INDEX.md, independently of
// the expected/ files.
func TestScanKnownAnswers(t *testing.T) {
	for _, tc := range []struct {
		table, column string
		wantSum       int64
		wantContains  []string
	}{
		{table: "dv-basic-with-checkpoint", column: "id", wantSum: 113365},
		{table: "dv-large-multi-dv-per-file", column: "value", wantSum: 1994767},
		{table: "dv-partitioned-with-checkpoint", column: "col1", wantSum: 1015},
		{table: "dv-small", column: "value", wantSum: 36},
		{table: "dbr-optimize-dv-cdc-logcompaction", column: "id", wantSum: 0 + 1 + 2 + 10 + 12},
		{table: "stats-timestamp-truncation", wantContains: []string{`"id":4,"ts_col":"1970-01-01T00:00:04.000500Z"`}},
		{table: "part-special-chars", wantContains: []string{`{"x":"A/A","y":1}`, `{"x":"B B","y":2}`}},
		{table: "part-timestamp-iso8601", wantContains: []string{`"ts":"2024-01-01T10:00:00.000000Z"`}},
		{table: "part-null", wantContains: []string{`{"k":null,"v":2}`}},
		{table: "type-widening", wantContains: []string{`"byte_long":1,"int_long":2,"float_double":3.4000000953674316,"byte_double":5,"short_double":6,"int_double":7,"decimal_decimal_same_scale":123.45,"decimal_decimal_greater_scale":67.89000,"byte_decimal":1.0,"short_decimal":2.0,"int_decimal":3.0,"long_decimal":4.0,"date_timestamp_ntz":"2024-09-09T00:00:00.000000"`}},
		{table: "type-widening-nested", wantContains: []string{`{"struct":{"a":1},"map":[{"key":2,"value":3}],"array":[4,5]}`}},
		{table: "void-column", wantContains: []string{`{"id":1,"void_col":null}`}},
		{table: "stats-writing-all-types", wantContains: []string{`"timestamp_ntz_col":"2023-06-15T12:30:00.000000"`, `"decimal_col":123.45`, `"map_col":{"key1":100}`}},
	} {
		t.Run(tc.table, func(t *testing.T) {
			root := testutil.DeltaTable(t, tc.table)
			snap := loadTestSnapshot(t, root)
			rows := scanLogicalRows(t, openScanTable(t, root), snap, time.UTC)
			all := strings.Join(rows, "\n")
			for _, w := range tc.wantContains {
				if !strings.Contains(all, w) {
					t.Errorf("no row contains %s; rows:\n%s", w, all)
				}
			}
			if tc.column == "" {
				return
			}
			var sum int64
			for _, r := range rows {
				var m map[string]any
				if err := json.Unmarshal([]byte(r), &m); err != nil {
					t.Fatal(err)
				}
				sum += int64(m[tc.column].(float64))
			}
			if sum != tc.wantSum {
				t.Errorf("sum(%s) = %d, want %d", tc.column, sum, tc.wantSum)
			}
		})
	}
}
