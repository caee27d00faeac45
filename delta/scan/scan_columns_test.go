package scan

import (
	"context"
	"errors"
	"io"
	"sort"
	"testing"

	"github.com/compactord/compactord/delta/internal/deltatest"

	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/testutil"
)

// allRows reads the rest of s row by row.
func allRows(s *FileScan) (rows []parquet.Row, err error) {
	buf := make([]parquet.Row, 64)
	for !errors.Is(err, io.EOF) {
		var n int
		if n, err = s.ReadRows(buf, nil); err != nil && !errors.Is(err, io.EOF) {
			return rows, err
		}
		rows = append(rows, buf[:n]...)
	}
	return rows, nil
}

// scanColumns reads every column of every row group of s with ReadColumn,
// checking that each batch holds whole rows.
func scanColumns(t *testing.T, s *FileScan, ncols int) [][]parquet.Value {
	t.Helper()
	cols := make([][]parquet.Value, ncols)
	var scratch ColumnScratch
	for rg := range s.NumRowGroups() {
		for c := range ncols {
			err := s.ReadColumn(rg, c, &scratch, nil, func(vals []parquet.Value) error {
				if len(vals) == 0 || vals[0].RepetitionLevel() != 0 {
					t.Fatalf("row group %d column %d: a batch of %d values that does not start a row", rg, c, len(vals))
				}
				for _, v := range vals {
					cols[c] = append(cols[c], v.Clone())
				}
				return nil
			})
			if err != nil {
				t.Fatalf("row group %d column %d: %v", rg, c, err)
			}
		}
	}
	return cols
}

// Reading a file column by column gives, column for column, the values
// reading it row by row gives, on every readable test table (schema
// evolution, column mapping, type widening, legacy layouts, INT96,
// deletion vectors), also in the rewrite schema with row tracking.
func TestReadColumnEqualsReadRows(t *testing.T) {
	tables := testutil.ExpectedTables(t)
	names := make([]string, 0, len(tables))
	for n, e := range tables {
		if e.Readable() {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	files := 0
	for _, name := range names {
		snap := loadTestSnapshot(t, testutil.DeltaTable(t, name))
		tb := openScanTable(t, testutil.DeltaTable(t, name))
		for _, rowTracking := range []bool{false, true} {
			for _, add := range snap.Files {
				s, err := OpenFileScan(context.Background(), tb, snap, add, ScanOptions{RowTracking: rowTracking})
				if errors.Is(err, delta.ErrNoBaseRowID) {
					continue
				}
				if err != nil {
					t.Fatalf("%s %s: %v", name, add.Path, err)
				}
				ncols := len(s.Schema().Columns())
				got := scanColumns(t, s, ncols)
				rows, err := allRows(s)
				if err != nil {
					t.Fatalf("%s %s: %v", name, add.Path, err)
				}
				want := deltatest.ColumnsOfRows(rows, ncols)
				for c := range ncols {
					if len(got[c]) != len(want[c]) {
						t.Fatalf("%s %s (row tracking %v) column %d: %d values by column, %d by row", name, add.Path, rowTracking, c, len(got[c]), len(want[c]))
					}
					for i := range want[c] {
						g, w := got[c][i], want[c][i]
						if !parquet.Equal(g, w) || g.RepetitionLevel() != w.RepetitionLevel() || g.DefinitionLevel() != w.DefinitionLevel() || g.Column() != w.Column() {
							t.Fatalf("%s %s (row tracking %v) column %d value %d: %v by column, %v by row", name, add.Path, rowTracking, c, i, g, w)
						}
					}
				}
				files++
			}
		}
	}
	if files < 50 {
		t.Errorf("compared only %d files", files)
	}
}

// keepLive cuts the deleted rows out of a batch by runs and reports where
// the next batch resumes in the deleted offsets.
func TestKeepLive(t *testing.T) {
	tests := []struct {
		name              string
		first             int64
		n, next, wantNext int
		dels, want        []int64
	}{
		{name: "none deleted", first: 0, n: 5, dels: nil, want: []int64{0, 1, 2, 3, 4}},
		{name: "deletions after the batch", first: 0, n: 3, dels: []int64{3, 7}, want: []int64{0, 1, 2}},
		{name: "first and last", first: 10, n: 5, dels: []int64{10, 14}, want: []int64{11, 12, 13}, wantNext: 2},
		{name: "adjacent run", first: 0, n: 6, dels: []int64{1, 2, 3}, want: []int64{0, 4, 5}, wantNext: 3},
		{name: "all deleted", first: 0, n: 3, dels: []int64{0, 1, 2, 9}, want: nil, wantNext: 3},
		{name: "resumes at next", first: 4, n: 4, dels: []int64{1, 5, 9}, next: 1, want: []int64{4, 6, 7}, wantNext: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals := make([]parquet.Value, tt.n)
			for i := range vals {
				vals[i] = parquet.Int64Value(tt.first + int64(i))
			}
			n, next := keepLive(vals, tt.first, tt.dels, tt.next)
			if n != len(tt.want) || next != tt.wantNext {
				t.Fatalf("keepLive kept %d values, next %d; want %d, next %d", n, next, len(tt.want), tt.wantNext)
			}
			for i, w := range tt.want {
				if got := vals[i].Int64(); got != w {
					t.Errorf("value %d is row %d, want row %d", i, got, w)
				}
			}
		})
	}
}
