package delta

import (
	"context"
	"errors"
	"io"
	"sort"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/internal/testutil"
)

// columnsOfRows splits rows into the values of each column, in row order.
func columnsOfRows(rows []parquet.Row, ncols int) [][]parquet.Value {
	cols := make([][]parquet.Value, ncols)
	for _, r := range rows {
		for c, vals := range r.Range {
			for _, v := range vals {
				cols[c] = append(cols[c], v.Clone())
			}
		}
	}
	return cols
}

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
				if errors.Is(err, ErrNoBaseRowID) {
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
				want := columnsOfRows(rows, ncols)
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
