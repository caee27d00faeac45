package writer

import (
	"context"
	"errors"
	"fmt"
	"io"

	deltascan "github.com/compactord/compactord/delta/scan"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/pq"
)

// directSource reads a source whose parquet schema is exactly the table's
// data schema (same names, types, logical types and repetition), so its rows
// need no conversion: they go from parquet-go to the output as they are, and
// only the deletion vector is applied here. Sources that need conversion
// (narrow types, INT96 timestamps, other layouts) use the Delta core's
// FileScan instead.
type directSource struct {
	key       string             // object key, for messages
	path      string             // the add action's path
	ra        *pq.ObjectReaderAt // classifies read errors
	file      *parquet.File
	rowGroups []parquet.RowGroup
	rg        int
	rows      parquet.Rows
	next      int64 // physical index of the next row rows returns
	dv        *roaring64.Bitmap
	buf       []parquet.Row
}

// sourceBufferSize is the per-column read buffer of a source
// (delta.ColumnBufferSize with opts.ReadBufferSize per column).
func sourceBufferSize(opts Options, n int, fileSize int64) int {
	return deltascan.ColumnBufferSize(opts.ReadBufferSize, n, fileSize)
}

// openDirect opens src for direct reading when its schema is the data
// schema; it returns nil (and no error) when the source needs conversion.
func openDirect(ctx context.Context, t *delta.Table, src *actions.Add, schema *parquet.Schema, opts Options) (*directSource, error) {
	key, err := src.Key()
	if err != nil {
		return nil, err
	}
	f, ra, err := openParquet(ctx, t.Bucket, src.Path, key, src.Size, sourceBufferSize(opts, len(schema.Columns()), src.Size), opts.sourcePages())
	if err != nil {
		return nil, err
	}
	if !parquet.EqualNodes(f.Schema(), schema) {
		return nil, nil
	}
	d := &directSource{key: key, path: src.Path, ra: ra, file: f, rowGroups: f.RowGroups()}
	var total int64
	for _, rg := range d.rowGroups {
		total += rg.NumRows()
	}
	if total != f.NumRows() {
		return nil, pq.DataFileError(src.Path, ra, fmt.Errorf("%s: row groups hold %d rows but the footer says %d", key, total, f.NumRows()))
	}
	if d.dv, err = delta.LoadFileDV(ctx, t, src, f.NumRows()); err != nil {
		return nil, err
	}
	return d, nil
}

// directFrom is the direct reader of a source already opened by the Delta
// core's scan, nil when its parquet schema is not the data schema.
func directFrom(src *actions.Add, s *deltascan.FileScan, schema *parquet.Schema) *directSource {
	f := s.File()
	if !parquet.EqualNodes(f.Schema(), schema) {
		return nil
	}
	key, err := src.Key()
	if err != nil {
		return nil
	}
	return &directSource{key: key, path: src.Path, ra: s.ObjectReader(), file: f, rowGroups: f.RowGroups(), dv: s.DeletionVector()}
}

// NumPhysicalRows is the footer's row count.
func (d *directSource) NumPhysicalRows() int64 { return d.file.NumRows() }

// ReadRows reads up to len(rows) live rows. The rows reference buffers that
// the next call reuses: callers consume them before reading again.
func (d *directSource) ReadRows(rows []parquet.Row, physIdx []int64) (n int, err error) {
	n, err = d.readRows(rows, physIdx)
	if err != nil && err != io.EOF {
		err = pq.DataFileError(d.path, d.ra, err)
	}
	return n, err
}

func (d *directSource) readRows(rows []parquet.Row, physIdx []int64) (n int, err error) {
	defer pq.RecoverParquet(&err)
	if d.dv == nil {
		// No deletions: read straight into the caller's slice.
		return d.read(rows, physIdx)
	}
	if len(d.buf) < len(rows) {
		d.buf = make([]parquet.Row, len(rows))
	}
	for n < len(rows) {
		m, rerr := d.read(d.buf[:len(rows)-n], nil)
		first := d.next - int64(m)
		for i := 0; i < m; i++ {
			idx := first + int64(i)
			if d.dv.Contains(uint64(idx)) {
				continue
			}
			// Swap rather than copy: every row buffer stays in exactly one
			// slot, so the next read reuses the caller's old buffer without
			// aliasing a row the caller holds.
			rows[n], d.buf[i] = d.buf[i], rows[n]
			if physIdx != nil {
				physIdx[n] = idx
			}
			n++
		}
		if rerr != nil {
			return n, rerr
		}
	}
	return n, nil
}

// read fills rows from the current row group onwards; io.EOF after the last.
func (d *directSource) read(rows []parquet.Row, physIdx []int64) (int, error) {
	n := 0
	for n < len(rows) {
		if d.rows == nil {
			if d.rg >= len(d.rowGroups) {
				return n, io.EOF
			}
			d.rows = d.rowGroups[d.rg].Rows()
		}
		m, err := d.rows.ReadRows(rows[n:])
		for i := 0; i < m; i++ {
			if physIdx != nil {
				physIdx[n+i] = d.next
			}
			d.next++
		}
		n += m
		if err != nil && !errors.Is(err, io.EOF) {
			return n, fmt.Errorf("%s: row group %d: %w", d.key, d.rg, err)
		}
		if errors.Is(err, io.EOF) || m == 0 {
			if cerr := d.rows.Close(); cerr != nil {
				return n, fmt.Errorf("%s: %w", d.key, cerr)
			}
			d.rows = nil
			d.rg++
		}
	}
	return n, nil
}

// Close releases the open row group.
func (d *directSource) Close() error {
	if d.rows != nil {
		err := d.rows.Close()
		d.rows = nil
		return err
	}
	return nil
}

// copyable reports whether every row group of the source can be handed to
// the parquet writer whole (the page-copy fast path): no deletion vector and
// row groups of at least minBytes, so that copying them keeps the output's
// row groups large.
func (d *directSource) copyable(minBytes int64) bool {
	if d.dv != nil || len(d.rowGroups) == 0 {
		return false
	}
	for _, rg := range d.file.Metadata().RowGroups {
		size := rg.TotalCompressedSize
		if size == 0 {
			for _, c := range rg.Columns {
				size += c.MetaData.TotalCompressedSize
			}
		}
		if size < minBytes {
			return false
		}
	}
	return true
}
