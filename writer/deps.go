package writer

import (
	"context"

	deltascan "github.com/compactord/compactord/delta/scan"

	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/pq"
	"github.com/compactord/compactord/delta/statscollect"
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
	// ObserveRowGroup observes every row of a row group, column by column.
	ObserveRowGroup(rg parquet.RowGroup) error
	// columns observes values column by column (distinct columns may be
	// observed concurrently); addRecords counts the rows they form.
	columns() deltascan.ColumnObserver
	addRecords(n int64)
	// part returns an empty sink for one share of the output's values
	// (one row group's columns, written beside another row group's);
	// merge folds such a part's statistics in and empties it for reuse.
	part() statsSink
	merge(part statsSink)
	Finish() (string, error)
}

func dataSchema(snap *delta.Snapshot) (*parquet.Schema, error) {
	return deltascan.RewriteSchema(snap)
}

func openSource(ctx context.Context, t *delta.Table, snap *delta.Snapshot, add *actions.Add, schema *parquet.Schema, opts Options) (rowSource, error) {
	s, err := openScan(ctx, t, snap, add, schema, opts)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// openScan opens the Delta core's scan of a source, for reading rows or
// columns.
func openScan(ctx context.Context, t *delta.Table, snap *delta.Snapshot, add *actions.Add, schema *parquet.Schema, opts Options) (*deltascan.FileScan, error) {
	buf := sourceBufferSize(opts, len(schema.Columns()), add.Size)
	return deltascan.OpenFileScan(ctx, t, snap, add, deltascan.ScanOptions{ReadBufferSize: buf, RowTracking: opts.rowTracking, Pages: opts.sourcePages()})
}

// statsAdapter adapts the Delta core's collector to statsSink.
type statsAdapter struct {
	c   *statscollect.StatsCollector
	buf []parquet.Value // scratch of ObserveRowGroup
}

func (a *statsAdapter) Observe(row parquet.Row) error     { a.c.Observe(row); return nil }
func (a *statsAdapter) Finish() (string, error)           { return a.c.Finish() }
func (a *statsAdapter) columns() deltascan.ColumnObserver { return a.c }
func (a *statsAdapter) addRecords(n int64)                { a.c.AddRecords(n) }
func (a *statsAdapter) part() statsSink                   { return &statsAdapter{c: a.c.Fresh()} }

func (a *statsAdapter) merge(part statsSink) {
	p := part.(*statsAdapter) // parts come from part
	a.c.Merge(p.c)
	p.c.Reset()
}

func (a *statsAdapter) ObserveRowGroup(rg parquet.RowGroup) (err error) {
	defer pq.RecoverParquet(&err)
	if a.buf == nil {
		a.buf = make([]parquet.Value, 1024)
	}
	return a.c.ObserveRowGroup(rg, a.buf)
}

// newStats returns a collector for one output: the table's stats columns
// and string prefix length, tightBounds when the protocol supports
// deletion vectors (as Spark writes them).
func newStats(snap *delta.Snapshot, schema *parquet.Schema) (statsSink, error) {
	c, err := statscollect.NewStatsCollector(&snap.Metadata, snap.Schema, schema)
	if err != nil {
		return nil, err
	}
	c.SetProtocol(snap.Protocol)
	return &statsAdapter{c: c}, nil
}
