package scan

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/compactord/compactord/delta/pq"
	"github.com/compactord/compactord/delta/statscollect"
	"github.com/parquet-go/parquet-go"
)

// A FileScan also reads column by column: ReadColumn converts the values of
// one target column of one row group (levels translated, types widened,
// deleted rows dropped, absent columns null-filled) from the file column the
// scan plan maps it to, page by page, without assembling a row. Writers
// that re-encode column by column (and in parallel across columns) use it
// instead of ReadRows; both give the same values.

// ColumnObserver receives a column's values as ReadColumn produces them
// (the Delta statistics of an output, say). ReadColumn calls it from the
// goroutine it runs on.
//
// The values and pages are those of data-schema column col; they may carry
// the source file's column index instead (a file whose columns are in
// another order), so an observer goes by col.
type ColumnObserver interface {
	// ObserveColumnPage folds a whole page of column col's values passed
	// through unchanged and reports whether it could (from the page's
	// bounds and null count); when it returns false the page's values are
	// observed.
	ObserveColumnPage(col int, p parquet.Page) bool
	// ObserveColumnValues folds values of column col.
	ObserveColumnValues(col int, vals []parquet.Value)
}

// columnBatch is the number of values ReadColumn hands over per call.
const columnBatch = 2048

// NumRowGroups is the number of row groups of the file.
func (s *FileScan) NumRowGroups() int { return len(s.rowGroups) }

// RowGroupRows returns the physical rows of row group i and how many of them
// the deletion vector leaves live.
func (s *FileScan) RowGroupRows(i int) (physical, live int64) {
	n := s.rowGroups[i].NumRows()
	return n, n - int64(len(s.deletedIn(i)))
}

// Identity reports whether the file's rows are rows of the data schema as
// they are: same columns in the same order, same levels and types.
func (s *FileScan) Identity() bool { return s.fast }

// File is the open parquet file.
func (s *FileScan) File() *parquet.File { return s.file }

// ObjectReader is the reader of the data file (it classifies read errors,
// see DataFileError).
func (s *FileScan) ObjectReader() *pq.ObjectReaderAt { return s.ra }

// SourceColumn is the file column that data-schema column col is read
// from, -1 when the file does not have it.
func (s *FileScan) SourceColumn(col int) int {
	if col < 0 || col >= len(s.byCol) || !s.byCol[col].present {
		return -1
	}
	return s.byCol[col].srcCol
}

// DeletionVector is the file's deleted rows, nil when none.
func (s *FileScan) DeletionVector() *roaring64.Bitmap { return s.dv }

// deletedIn lists the deleted rows of row group i as offsets in it, in order.
func (s *FileScan) deletedIn(i int) []int64 {
	if s.dv == nil {
		return nil
	}
	first := s.rgStart[i]
	end := first + s.rowGroups[i].NumRows()
	var out []int64
	it := s.dv.Iterator()
	it.AdvanceIfNeeded(uint64(first))
	for it.HasNext() {
		x := int64(it.Next())
		if x >= end {
			break
		}
		out = append(out, x-first)
	}
	return out
}

// ColumnScratch is reusable memory of ReadColumn calls made one after the
// other (by one goroutine). The zero value is ready to use.
type ColumnScratch struct {
	in, out []parquet.Value
	arena   byteArena
}

// ReadColumn reads the live values of data-schema column col in row group
// rg and calls emit with them in order, in batches of whole rows (the
// values are valid only during the call). Values with the table's type and
// levels are handed over as the file's pages hold them, so their column
// index may be the file's, not col. obs, when not nil, observes every
// value emitted; scratch (nil: allocated) is the call's working memory.
// Calls for distinct columns may run concurrently, each with its own
// scratch; a call and ReadRows may not.
func (s *FileScan) ReadColumn(rg, col int, scratch *ColumnScratch, obs ColumnObserver, emit func([]parquet.Value) error) (err error) {
	if rg < 0 || rg >= len(s.rowGroups) || col < 0 || col >= len(s.byCol) {
		return fmt.Errorf("data file %s: no column %d in row group %d", s.key, col, rg)
	}
	defer pq.RecoverParquet(&err)
	if scratch == nil {
		scratch = &ColumnScratch{}
	}
	r := columnReader{
		lp: s.byCol[col], col: col, obs: obs, emit: emit, scratch: scratch,
		dels:     s.deletedIn(rg),
		repeated: s.tgtRep[col] > 0,
	}
	if f := s.rowIDs; f != nil {
		// Row tracking columns: a null (or absent) row id is baseRowId +
		// physical index, a null row commit version the default one.
		first := s.rgStart[rg]
		switch col {
		case f.idCol:
			r.fill = func(row int64) parquet.Value { return parquet.Int64Value(f.base+first+row).Level(0, 1, col) }
		case f.versionCol:
			r.fill = func(int64) parquet.Value { return parquet.Int64Value(f.version).Level(0, 1, col) }
		}
	}
	if err := r.read(s.rowGroups[rg]); err != nil {
		return pq.DataFileError(s.path, s.ra, fmt.Errorf("data file %s: row group %d: column %s: %w", s.key, rg, r.lp.tgt.path, err))
	}
	return nil
}

// columnReader converts one column of one row group.
type columnReader struct {
	lp       *leafPlan
	col      int
	obs      ColumnObserver
	emit     func([]parquet.Value) error
	dels     []int64 // deleted row offsets, ascending
	repeated bool    // the target column is repeated: batches end at row starts
	scratch  *ColumnScratch
	out      []parquet.Value
	// fill, when set, replaces the nulls of this (top-level, required in
	// effect) column with the value of their row (its offset in the row
	// group).
	fill func(row int64) parquet.Value
}

func (r *columnReader) read(rg parquet.RowGroup) error {
	if r.lp.srcCol < 0 && r.fill == nil {
		return r.nulls(rg.NumRows() - int64(len(r.dels)))
	}
	if r.lp.srcCol < 0 {
		return r.filled(rg.NumRows())
	}
	sc := r.scratch
	if cap(sc.in) < columnBatch {
		sc.in = make([]parquet.Value, columnBatch)
		sc.out = make([]parquet.Value, 0, columnBatch)
	}
	in := sc.in[:columnBatch]
	r.out = sc.out[:0]
	defer func() {
		clear(r.out[:cap(r.out)]) // no page memory stays reachable
		sc.out = r.out[:0]
		sc.arena.reset()
	}()
	// flat: one value per row in the file and in the table, so the
	// deleted rows (if any) are cut out of each batch by ranges and the
	// rest converted in place (levels, type), or handed over unchanged when
	// only their column index differs.
	lp := r.lp
	flat := !r.repeated && r.fill == nil && len(lp.repMap) == 1
	unchanged := flat && lp.sameType && identityLevels(lp)
	row := int64(-1) // offset of the current row in the row group
	deleted := false
	next := 0 // index into dels of the next deleted row
	pages := rg.ColumnChunks()[r.lp.srcCol].Pages()
	defer pages.Close()
	for {
		p, err := pages.ReadPage()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		// A page's bounds are its values' only when none of them is deleted
		// and their type is the table's (the levels do not change them).
		observed := flat && lp.sameType && r.obs != nil && !r.deletesIn(row, p.NumRows()) && r.obs.ObserveColumnPage(r.col, p)
		vr := p.Values()
		for {
			n, rerr := vr.ReadValues(in)
			if rerr != nil && !errors.Is(rerr, io.EOF) {
				parquet.Release(p)
				return rerr
			}
			if flat {
				first := row + 1
				row += int64(n)
				n, next = keepLive(in[:n], first, r.dels, next)
				if n > 0 {
					err := r.emitFlat(in[:n], unchanged, observed)
					if err != nil {
						parquet.Release(p)
						return err
					}
				}
			} else {
				for _, v := range in[:n] {
					if v.RepetitionLevel() == 0 {
						row++
						deleted = next < len(r.dels) && r.dels[next] == row
						if deleted {
							next++
						}
					}
					if deleted {
						continue
					}
					var err error
					if r.fill != nil && v.IsNull() {
						err = r.queue(r.fill(row))
					} else {
						err = r.add(v)
					}
					if err != nil {
						parquet.Release(p)
						return err
					}
				}
			}
			if rerr != nil {
				break
			}
		}
		// Values left in out may point into the page: hand them over (or,
		// for the start of a row that continues, copy them) before the page
		// goes back to the pool.
		err = r.flush(false)
		parquet.Release(p)
		if err != nil {
			return err
		}
	}
	return r.flush(true)
}

// deletesIn reports whether any of the n rows after row (the offset of the
// last row read) is deleted.
func (r *columnReader) deletesIn(row, n int64) bool {
	i, _ := slices.BinarySearch(r.dels, row+1)
	return i < len(r.dels) && r.dels[i] <= row+n
}

// keepLive drops the deleted rows from vals, the values of consecutive rows
// (one value each) starting at offset first, moving the live runs down in
// place; dels[next:] are the deleted offsets not yet passed. It returns the
// number of live values and the index of the first deleted offset after
// the batch.
func keepLive(vals []parquet.Value, first int64, dels []int64, next int) (int, int) {
	end := first + int64(len(vals))
	if next >= len(dels) || dels[next] >= end {
		return len(vals), next
	}
	w := int(dels[next] - first) // values before the first deletion stay
	for next < len(dels) && dels[next] < end {
		from := int(dels[next]-first) + 1
		next++
		to := len(vals)
		if next < len(dels) && dels[next] < end {
			to = int(dels[next] - first)
		}
		w += copy(vals[w:], vals[from:to])
	}
	return w, next
}

// emitFlat emits a batch of live values of a column that has one value per
// row, first converting them in place to the table's levels and type unless
// unchanged; observed means their page is observed already.
func (r *columnReader) emitFlat(vals []parquet.Value, unchanged, observed bool) error {
	if !unchanged {
		lp := r.lp
		for i, v := range vals {
			d := v.DefinitionLevel()
			def := lp.defMap[d]
			switch {
			case def < 0:
				return fmt.Errorf("null in non-nullable column %s", lp.nullStepPath[d])
			case !lp.present || d != lp.srcMaxDef:
				v = parquet.Value{}
			case !lp.sameType:
				cv, err := lp.conv(v, &r.scratch.arena)
				if err != nil {
					return err
				}
				v = cv
			}
			vals[i] = v.Level(0, def, r.col)
		}
	}
	if r.obs != nil && !observed {
		r.obs.ObserveColumnValues(r.col, vals)
	}
	err := r.emit(vals)
	r.scratch.arena.reset()
	return err
}

// add converts one live file value and queues it.
func (r *columnReader) add(v parquet.Value) error {
	lp := r.lp
	rep := lp.repMap[v.RepetitionLevel()]
	if rep < 0 {
		return nil
	}
	d := v.DefinitionLevel()
	def := lp.defMap[d]
	if def < 0 {
		return fmt.Errorf("null in non-nullable column %s", lp.nullStepPath[d])
	}
	switch {
	case !lp.present || d != lp.srcMaxDef:
		v = parquet.Value{}
	case lp.sameType:
	default:
		cv, err := lp.conv(v, &r.scratch.arena)
		if err != nil {
			return err
		}
		v = cv
	}
	return r.queue(v.Level(rep, def, r.col))
}

// queue appends one target value, emitting the queue first when full.
func (r *columnReader) queue(v parquet.Value) error {
	if len(r.out) == cap(r.out) {
		if err := r.flush(false); err != nil {
			return err
		}
	}
	r.out = append(r.out, v)
	return nil
}

// flush emits the queued values. Unless last, a repeated column keeps the
// values of its unfinished last row, with their bytes copied (the page and
// the arena they point into are about to be reused); a row longer than a
// batch grows the queue rather than being split.
func (r *columnReader) flush(last bool) error {
	k := len(r.out)
	if r.repeated && !last {
		for k > 0 && r.out[k-1].RepetitionLevel() != 0 {
			k--
		}
		k = max(k-1, 0) // the last row starts at k
	}
	if k > 0 {
		if r.obs != nil {
			r.obs.ObserveColumnValues(r.col, r.out[:k])
		}
		if err := r.emit(r.out[:k]); err != nil {
			return err
		}
	}
	r.out = r.out[:copy(r.out, r.out[k:])]
	r.ownTail()
	r.scratch.arena.reset()
	return nil
}

// ownTail gives the queued values bytes of their own.
func (r *columnReader) ownTail() {
	for j := range r.out {
		v := r.out[j]
		if v.IsNull() {
			continue
		}
		switch v.Kind() {
		case parquet.ByteArray:
			r.out[j] = parquet.ByteArrayValue(append([]byte(nil), v.ByteArray()...)).Level(v.RepetitionLevel(), v.DefinitionLevel(), r.col)
		case parquet.FixedLenByteArray:
			r.out[j] = parquet.FixedLenByteArrayValue(append([]byte(nil), v.ByteArray()...)).Level(v.RepetitionLevel(), v.DefinitionLevel(), r.col)
		}
	}
}

// filled emits the fill value of every live row of a row group of n rows
// (a row tracking column the file does not have).
func (r *columnReader) filled(n int64) error {
	r.out = r.scratch.out[:0]
	next := 0
	for row := range n {
		if next < len(r.dels) && r.dels[next] == row {
			next++
			continue
		}
		if err := r.queue(r.fill(row)); err != nil {
			return err
		}
	}
	err := r.flush(true)
	r.scratch.out = r.out[:0]
	return err
}

// nulls emits n null rows (a column the file does not have).
func (r *columnReader) nulls(n int64) error {
	if cap(r.scratch.in) < columnBatch {
		r.scratch.in = make([]parquet.Value, columnBatch)
	}
	buf := r.scratch.in[:min(n, columnBatch)]
	for i := range buf {
		buf[i] = parquet.Value{}.Level(0, 0, r.col)
	}
	for n > 0 {
		k := min(n, int64(len(buf)))
		if r.obs != nil {
			r.obs.ObserveColumnValues(r.col, buf[:k])
		}
		if err := r.emit(buf[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// ReadColumnPages is ReadColumn for a reader that decodes pages itself: when
// column col of row group rg would be handed over unchanged with every row
// live (the file's column has the table's type and levels, is flat and not
// a row tracking column the scan fills, and no row of the row group is
// deleted), it calls emit with each of the column's pages in order (valid
// only during the call; their values may carry the file's column index)
// and reports true. Otherwise it reads nothing and reports false: the
// caller reads the column with ReadColumn. obs, when not nil, observes every
// page (its bounds, or its values read through scratch).
func (s *FileScan) ReadColumnPages(rg, col int, scratch *ColumnScratch, obs ColumnObserver, emit func(parquet.Page) error) (ok bool, err error) {
	if rg < 0 || rg >= len(s.rowGroups) || col < 0 || col >= len(s.byCol) {
		return false, fmt.Errorf("data file %s: no column %d in row group %d", s.key, col, rg)
	}
	lp := s.byCol[col]
	if lp.srcCol < 0 || !lp.present || !lp.sameType || !identityLevels(lp) || len(lp.repMap) != 1 || s.tgtRep[col] > 0 ||
		len(s.deletedIn(rg)) > 0 || (s.rowIDs != nil && (col == s.rowIDs.idCol || col == s.rowIDs.versionCol)) {
		return false, nil
	}
	defer pq.RecoverParquet(&err)
	if scratch == nil {
		scratch = &ColumnScratch{}
	}
	if err := s.readPages(rg, lp.srcCol, col, scratch, obs, emit); err != nil {
		return true, pq.DataFileError(s.path, s.ra, fmt.Errorf("data file %s: row group %d: column %s: %w", s.key, rg, lp.tgt.path, err))
	}
	return true, nil
}

// readPages hands the pages of file column src of row group rg to emit,
// observed as data-schema column col.
func (s *FileScan) readPages(rg, src, col int, scratch *ColumnScratch, obs ColumnObserver, emit func(parquet.Page) error) error {
	return statscollect.ReadPages(s.rowGroups[rg].ColumnChunks()[src], func(p parquet.Page) error {
		if obs != nil && !obs.ObserveColumnPage(col, p) {
			if err := observePageValues(p, col, scratch, obs); err != nil {
				return err
			}
		}
		return emit(p)
	})
}

// observePageValues has obs observe every value of page p.
func observePageValues(p parquet.Page, col int, scratch *ColumnScratch, obs ColumnObserver) error {
	if cap(scratch.in) < columnBatch {
		scratch.in = make([]parquet.Value, columnBatch)
	}
	in := scratch.in[:columnBatch]
	defer clear(in) // no page memory stays reachable
	vr := p.Values()
	for {
		n, err := vr.ReadValues(in)
		if n > 0 {
			obs.ObserveColumnValues(col, in[:n])
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
