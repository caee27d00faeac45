package writer

import (
	"context"
	"fmt"

	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/delta"
)

// This file is the one place where the writer binds to the Delta core's
// scan, schema and statistics code.

// rowSource streams the live rows of one source file.
type rowSource interface {
	ReadRows(rows []parquet.Row, physIdx []int64) (int, error)
	NumPhysicalRows() int64
	Close() error
}

// statsSink computes the Delta statistics of one output from its rows.
type statsSink interface {
	Observe(row parquet.Row) error
	Finish() (string, error)
}

func dataSchema(snap *delta.Snapshot) (*parquet.Schema, error) {
	return delta.DataSchema(snap)
}

func openSource(ctx context.Context, t *delta.Table, snap *delta.Snapshot, add *delta.Add, opts Options) (rowSource, error) {
	s, err := delta.OpenFileScan(ctx, t, snap, add, delta.ScanOptions{ReadBufferSize: opts.ReadBufferSize})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// TEMPORARY until the stats collector lands: numRecords only.
type tmpStats struct{ n int64 }

func (s *tmpStats) Observe(parquet.Row) error { s.n++; return nil }
func (s *tmpStats) Finish() (string, error) {
	return fmt.Sprintf(`{"numRecords":%d,"tightBounds":true}`, s.n), nil
}

func newStats(snap *delta.Snapshot, schema *parquet.Schema) (statsSink, error) {
	return &tmpStats{}, nil
}
