package delta

import (
	"context"

	"github.com/parquet-go/parquet-go"
)

// FileScan streams the live rows (DV applied) of one data file, converted to
// the table's physical data schema (see DataSchema): physical column names,
// table types (narrow physical types widened), no partition columns, no CDF
// columns.
type FileScan struct {
	schema *parquet.Schema
}

// ScanOptions tune a FileScan.
type ScanOptions struct {
	// ReadBufferSize is the size of the buffered range reads on the object
	// (default a few MiB: object stores want few, large GETs).
	ReadBufferSize int
}

// OpenFileScan opens the data file of add for reading its live rows.
func OpenFileScan(ctx context.Context, t *Table, snap *Snapshot, add *Add, opts ScanOptions) (*FileScan, error) {
	return nil, ErrNotImplemented
}

// Schema is the parquet schema of the rows ReadRows returns.
func (s *FileScan) Schema() *parquet.Schema { return s.schema }

// ReadRows reads up to len(rows) live rows. For each row it also sets
// physIdx[i] to the row's physical index in the file. The rows are owned by
// the caller (safe to retain). It returns io.EOF after the last row.
func (s *FileScan) ReadRows(rows []parquet.Row, physIdx []int64) (int, error) {
	return 0, ErrNotImplemented
}

// Close releases the file.
func (s *FileScan) Close() error { return nil }
