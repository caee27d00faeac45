package scan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/pq"
	"github.com/parquet-go/parquet-go"
	"gocloud.dev/gcerrors"
)

// DefaultReadBufferSize is the default size of the buffered range reads a
// FileScan makes per column chunk. Object stores want few, large GETs: the
// parquet-go default (4 KiB) made thousands of requests for one file.
const DefaultReadBufferSize = 4 << 20

// maxScanBufferBytes bounds the read buffers of one FileScan (one buffer
// per column): wide tables get smaller per-column buffers.
const maxScanBufferBytes = 64 << 20

// FileScan streams the live rows (DV applied) of one data file, converted to
// the table's physical data schema (see DataSchema): physical column names,
// table types (narrow physical types widened), no partition columns, no CDF
// columns.
type FileScan struct {
	schema *parquet.Schema
	shape  *dataShape
	key    string // table URL and object key, for messages
	path   string // the add action's path, for CorruptFileError
	plans  []*leafPlan

	file      *parquet.File
	rowGroups []parquet.RowGroup
	rg        int
	rows      parquet.Rows
	// next is the physical index of the next row rows will return.
	next    int64
	numRows int64
	dv      *roaring64.Bitmap

	// byCol is the plan of each data-schema column, tgtRep its maximum
	// repetition level, rgStart the physical index of each row group's
	// first row (for ReadColumn).
	byCol   []*leafPlan
	tgtRep  []int
	rgStart []int64

	srcBuf   []parquet.Row
	colStart []int
	done     bool
	ra       *pq.ObjectReaderAt

	// slab and arena hold the values and bytes of returned rows.
	slab  []parquet.Value
	arena byteArena
	// reuse recycles slab and arena on every ReadRows call.
	reuse bool
	// fast is set when the file's schema is the data schema itself (same
	// columns, levels and types): rows are copied value by value.
	fast bool
	// rowIDs, when set, fills the trailing row tracking values of each row
	// (shape.rowTracking).
	rowIDs *rowIDFill
}

// ScanOptions tune a FileScan.
type ScanOptions struct {
	// ReadBufferSize is the size of the buffered range reads on the object
	// per column chunk (default DefaultReadBufferSize, lowered for wide
	// tables so that one scan buffers at most 64 MiB).
	ReadBufferSize int
	// ReuseRows makes the rows returned by ReadRows valid only until the
	// next ReadRows call, which then recycles their storage. Streaming
	// callers that consume rows immediately (a parquet writer copies what it
	// is given) avoid allocating per batch.
	ReuseRows bool
	// DV, when non-nil, is used as the file's deleted rows instead of
	// reading add.DeletionVector (callers that already loaded it).
	DV *roaring64.Bitmap
	// RowTracking reads rows in the rewrite schema (RewriteSchema): when
	// the table's row tracking is enabled, every row ends with its stable
	// row id and row commit version, the file's materialized value where
	// it has a non-null one, else baseRowId + physical row index and
	// defaultRowCommitVersion (PROTOCOL.md "Reader Requirements for Row
	// Tracking"). Without enabled row tracking it changes nothing.
	RowTracking bool
	// Pages bound what the file's pages may claim (PageLimits; zero
	// fields take the defaults): a page or column chunk over them makes
	// the file corrupt before parquet-go allocates for it.
	Pages pq.PageLimits
}

// OpenFileScan opens the data file of add for reading its live rows.
func OpenFileScan(ctx context.Context, t *delta.Table, snap *delta.Snapshot, add *actions.Add, opts ScanOptions) (*FileScan, error) {
	shape := newDataShape
	if opts.RowTracking {
		shape = newRewriteShape
	}
	ds, err := shape(snap)
	if err != nil {
		return nil, err
	}
	return openFileScan(ctx, t, ds, add, opts)
}

func openFileScan(ctx context.Context, t *delta.Table, ds *dataShape, add *actions.Add, opts ScanOptions) (*FileScan, error) {
	key, err := add.Key()
	if err != nil {
		return nil, err
	}
	name := key
	if t.URL != "" {
		name = t.URL + " " + key
	}
	size := add.Size
	if size <= 0 {
		attrs, err := t.Bucket.Attributes(ctx, key)
		if err != nil {
			return nil, pq.MissingOr(add.Path, dataFileError(name, err))
		}
		size = attrs.Size
	}
	bufSize := opts.ReadBufferSize
	if bufSize <= 0 {
		bufSize = ColumnBufferSize(DefaultReadBufferSize, len(ds.leaves), size)
	}
	ra := pq.NewObjectReaderAt(ctx, t.Bucket, key, size)
	guard := pq.NewPageGuard(ra, add.Path, opts.Pages)
	f, err := pq.OpenParquet(guard, size, bufSize)
	if err != nil {
		return nil, pq.DataFileError(add.Path, ra, dataFileError(name, err))
	}
	if err := guard.Watch(f); err != nil {
		return nil, err
	}
	plans, err := planScan(ds, f.Schema(), name)
	if err != nil {
		return nil, err
	}
	s := &FileScan{
		schema: ds.schema, shape: ds, key: name, path: add.Path, plans: plans,
		file: f, rowGroups: f.RowGroups(), numRows: f.NumRows(),
		colStart: make([]int, len(f.Schema().Columns())+1),
		ra:       ra,
		reuse:    opts.ReuseRows,
		fast:     isIdentityPlan(plans, len(f.Schema().Columns())),
	}
	if ds.rowTracking {
		if add.BaseRowID == nil || add.DefaultRowCommitVersion == nil {
			return nil, fmt.Errorf("data file %s: %w", name, delta.ErrNoBaseRowID)
		}
		n := len(ds.leaves)
		s.rowIDs = &rowIDFill{idCol: n - 2, versionCol: n - 1, base: *add.BaseRowID, version: *add.DefaultRowCommitVersion}
	}
	var total int64
	s.rgStart = make([]int64, len(s.rowGroups))
	for i, rg := range s.rowGroups {
		s.rgStart[i] = total
		total += rg.NumRows()
	}
	if total != s.numRows {
		return nil, pq.DataFileError(add.Path, ra, fmt.Errorf("data file %s: row groups hold %d rows but the footer says %d", name, total, s.numRows))
	}
	if err := s.indexColumns(); err != nil {
		return nil, err
	}
	dv := opts.DV
	if dv == nil {
		if dv, err = delta.LoadFileDV(ctx, t, add, s.numRows); err != nil {
			return nil, fmt.Errorf("table %s: %w", t.URL, err)
		}
	}
	if dv != nil && !dv.IsEmpty() {
		if m := int64(dv.Maximum()); m >= s.numRows {
			return nil, delta.CorruptFileDV(add, fmt.Errorf("%w: deletes row %d but data file %s has %d rows", delta.ErrCorruptDV, m, name, s.numRows))
		}
		s.dv = dv
	}
	return s, nil
}

// indexColumns maps every data-schema column to its plan.
func (s *FileScan) indexColumns() error {
	cols := s.schema.Columns()
	s.byCol = make([]*leafPlan, len(cols))
	s.tgtRep = make([]int, len(cols))
	for i, path := range cols {
		lc, _ := s.schema.Lookup(path...)
		s.tgtRep[i] = lc.MaxRepetitionLevel
	}
	for _, lp := range s.plans {
		if c := lp.tgt.col; c >= 0 && c < len(s.byCol) {
			s.byCol[c] = lp
		}
	}
	for i, lp := range s.byCol {
		if lp == nil {
			return fmt.Errorf("data file %s: internal error: no plan for column %s", s.key, strings.Join(cols[i], "."))
		}
	}
	return nil
}

// ColumnBufferSize is the per-column read buffer for a file of fileSize
// bytes with n leaf columns, given a per-column maximum: at most
// maxScanBufferBytes for all columns together, no more than an average
// column chunk (at least 64 KiB) so small files hold small buffers, and
// 64 KiB for objects ObjectReaderAt fetches whole (a larger buffer would
// only copy memory into memory). It is rounded down to a power of two
// because parquet-go pools its buffers per size.
func ColumnBufferSize(perColumn, n int, fileSize int64) int {
	size := perColumn
	if size <= 0 {
		size = DefaultReadBufferSize
	}
	if fileSize > 0 && fileSize <= pq.WholeObjectMax {
		size = 64 << 10
	}
	if n > 0 {
		if size*n > maxScanBufferBytes {
			size = max(maxScanBufferBytes/n, 256<<10)
		}
		if fileSize > 0 {
			size = min(size, max(int(fileSize/int64(n)), 64<<10))
		}
	}
	p := 64 << 10
	for p*2 <= size {
		p *= 2
	}
	return p
}

func dataFileError(name string, err error) error {
	if gcerrors.Code(err) == gcerrors.NotFound {
		return fmt.Errorf("data file %s does not exist: %w", name, err)
	}
	return fmt.Errorf("data file %s: %w", name, err)
}

// Schema is the parquet schema of the rows ReadRows returns.
func (s *FileScan) Schema() *parquet.Schema { return s.schema }

// NumPhysicalRows is the number of rows in the file, deleted ones included.
func (s *FileScan) NumPhysicalRows() int64 { return s.numRows }

// NumDeleted is the number of rows the deletion vector removes.
func (s *FileScan) NumDeleted() int64 {
	if s.dv == nil {
		return 0
	}
	return int64(s.dv.GetCardinality())
}

// ReadRows reads up to len(rows) live rows. For each row it also sets
// physIdx[i] to the row's physical index in the file (physIdx may be nil).
// The rows are owned by the caller (safe to retain): ReadRows allocates
// fresh row storage on every call and never writes into rows[i]'s old
// backing array. It returns io.EOF after the last row (possibly with n > 0).
func (s *FileScan) ReadRows(rows []parquet.Row, physIdx []int64) (n int, err error) {
	if physIdx != nil && len(physIdx) < len(rows) {
		return 0, fmt.Errorf("ReadRows: physIdx shorter than rows")
	}
	n, err = s.readRows(rows, physIdx)
	if err != nil && err != io.EOF {
		err = pq.DataFileError(s.path, s.ra, err)
	}
	return n, err
}

func (s *FileScan) readRows(rows []parquet.Row, physIdx []int64) (n int, err error) {
	defer pq.RecoverParquet(&err)
	if len(rows) == 0 {
		return 0, nil
	}
	if len(s.srcBuf) < len(rows) {
		s.srcBuf = make([]parquet.Row, len(rows))
	}
	if s.reuse {
		// Rows of the previous call are dead: recycle their storage.
		s.slab = s.slab[:0]
		s.arena.reset()
	}
	for n < len(rows) {
		if s.done {
			return n, io.EOF
		}
		if s.rows == nil {
			if s.rg >= len(s.rowGroups) {
				s.done = true
				continue
			}
			s.rows = s.rowGroups[s.rg].Rows()
		}
		want := len(rows) - n
		m, rerr := s.rows.ReadRows(s.srcBuf[:want])
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return n, fmt.Errorf("data file %s: row group %d: %w", s.key, s.rg, rerr)
		}
		for i := 0; i < m; i++ {
			idx := s.next
			s.next++
			if s.dv != nil && s.dv.Contains(uint64(idx)) {
				continue
			}
			src := s.srcBuf[i]
			if need := len(src) + len(s.plans); cap(s.slab)-len(s.slab) < need {
				if s.reuse && len(s.slab) == 0 {
					s.slab = make([]parquet.Value, 0, max(need*want, 4096))
				} else if !s.reuse {
					// Earlier rows keep the old slab; never write it again.
					s.slab = make([]parquet.Value, 0, max(need*(want-n), slabValues))
				}
			}
			start := len(s.slab)
			var err error
			if s.fast {
				s.slab = s.copyRow(s.slab, src)
			} else {
				s.slab, err = s.convertRow(s.slab, src)
				if err != nil {
					return n, fmt.Errorf("data file %s: row %d: %w", s.key, idx, err)
				}
			}
			rows[n] = s.slab[start:len(s.slab):len(s.slab)]
			if s.rowIDs != nil {
				if err := s.rowIDs.fill(rows[n], idx); err != nil {
					return n, fmt.Errorf("data file %s: row %d: %w", s.key, idx, err)
				}
			}
			if physIdx != nil {
				physIdx[n] = idx
			}
			n++
		}
		if errors.Is(rerr, io.EOF) || m == 0 {
			if cerr := s.rows.Close(); cerr != nil {
				return n, fmt.Errorf("data file %s: %w", s.key, cerr)
			}
			s.rows = nil
			s.rg++
		}
	}
	return n, nil
}

// slabValues is the minimum size of a value slab (about 1.5 MiB).
const slabValues = 64 << 10

// copyRow copies a row whose file schema is the data schema itself: only
// byte arrays need copying out of the file's buffers.
func (s *FileScan) copyRow(out []parquet.Value, row parquet.Row) []parquet.Value {
	for _, v := range row {
		switch v.Kind() {
		case parquet.ByteArray:
			if !v.IsNull() {
				v = parquet.ByteArrayValue(s.arena.copy(v.ByteArray())).Level(v.RepetitionLevel(), v.DefinitionLevel(), v.Column())
			}
		case parquet.FixedLenByteArray:
			if !v.IsNull() {
				v = parquet.FixedLenByteArrayValue(s.arena.copy(v.ByteArray())).Level(v.RepetitionLevel(), v.DefinitionLevel(), v.Column())
			}
		}
		out = append(out, v)
	}
	return out
}

// convertRow appends the target values of one file row to out.
func (s *FileScan) convertRow(out []parquet.Value, row parquet.Row) ([]parquet.Value, error) {
	a := &s.arena
	// Values of a row are grouped by column in column order.
	cs := s.colStart
	for i := range cs {
		cs[i] = -1
	}
	col := -1
	for i, v := range row {
		c := v.Column()
		if c != col {
			if c < 0 || c >= len(cs)-1 {
				return out, fmt.Errorf("value of unknown column %d", c)
			}
			cs[c] = i
			col = c
		}
	}
	for _, lp := range s.plans {
		tcol := lp.tgt.col
		if lp.srcCol < 0 {
			out = append(out, parquet.Value{}.Level(0, 0, tcol))
			continue
		}
		i := cs[lp.srcCol]
		if i < 0 {
			return out, fmt.Errorf("column %s has no values", lp.tgt.path)
		}
		if lp.direct {
			j := i
			for j < len(row) && row[j].Column() == lp.srcCol {
				j++
			}
			out = s.copyRow(out, row[i:j])
			continue
		}
		for ; i < len(row) && row[i].Column() == lp.srcCol; i++ {
			v := row[i]
			r := lp.repMap[v.RepetitionLevel()]
			if r < 0 {
				continue
			}
			d := v.DefinitionLevel()
			td := lp.defMap[d]
			if td < 0 {
				return out, fmt.Errorf("null in non-nullable column %s", lp.nullStepPath[d])
			}
			if lp.present && d == lp.srcMaxDef {
				cv, err := lp.conv(v, a)
				if err != nil {
					return out, fmt.Errorf("column %s: %w", lp.tgt.path, err)
				}
				out = append(out, cv.Level(r, td, tcol))
			} else {
				out = append(out, parquet.Value{}.Level(r, td, tcol))
			}
		}
	}
	return out, nil
}

// Close releases the file.
func (s *FileScan) Close() error {
	if s.rows != nil {
		err := s.rows.Close()
		s.rows = nil
		return err
	}
	return nil
}

// rowIDFill completes the trailing materialized row tracking values of
// rows in the rewrite schema: a null row id becomes baseRowId + physical
// index, a null row commit version the file's defaultRowCommitVersion.
type rowIDFill struct {
	idCol, versionCol int
	base, version     int64
}

func (f *rowIDFill) fill(row parquet.Row, physIdx int64) error {
	if len(row) < 2 || row[len(row)-2].Column() != f.idCol || row[len(row)-1].Column() != f.versionCol {
		return errors.New("row does not end with the row tracking columns")
	}
	if v := &row[len(row)-2]; v.IsNull() {
		*v = parquet.Int64Value(f.base+physIdx).Level(0, 1, f.idCol)
	}
	if v := &row[len(row)-1]; v.IsNull() {
		*v = parquet.Int64Value(f.version).Level(0, 1, f.versionCol)
	}
	return nil
}
