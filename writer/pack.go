package writer

import (
	"context"
	"fmt"

	deltascan "github.com/compactord/compactord/delta/scan"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/compactord/compactord/composition"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/pq"
)

// The pack path writes sources column by column. Sources whose row groups
// are too small (or that differ from the data schema, or carry a deletion
// vector) to be copied page for page wait in the job's pack; a pack becomes
// output row groups of about packBytes of source each, and each output row
// group is written one column at a time: every column of every source row
// group in it is read by the Delta core's FileScan.ReadColumn (types
// widened, levels translated, absent columns null-filled, deleted rows
// dropped) straight into the column's writer. Columns are independent, so
// up to GOMAXPROCS of them are converted, encoded and compressed at once,
// in the background while the job opens the next sources, and the columns
// of the next row group start while those of the previous one finish
// (encode.go). No row is assembled.

// packedSource is a source waiting in the job's pack.
type packedSource struct {
	src  *actions.Add
	scan *deltascan.FileScan
}

// packable reports whether a source goes to the pack: the whole-row-group
// paths are on and every row group fits in one output row group (at most
// RowGroupRows rows and RowGroupBytes compressed bytes; a source row group
// is never split, so larger ones go row by row).
func (jw *jobWriter) packable(s *deltascan.FileScan) bool {
	if jw.opts.DisableCopyPath || s.NumRowGroups() == 0 {
		return false
	}
	meta := s.File().Metadata().RowGroups
	for i := range s.NumRowGroups() {
		if n, _ := s.RowGroupRows(i); n > jw.opts.RowGroupRows || rowGroupBytes(meta, i) > jw.opts.RowGroupBytes {
			return false
		}
	}
	return true
}

// addToPack records src's run (its live rows follow the rows already
// written and packed) and queues it; the pack is written when it holds
// packBytes of sources or would fill the output.
func (jw *jobWriter) addToPack(ctx context.Context, src *actions.Add, s *deltascan.FileScan, physical int64) error {
	var live int64
	for i := range s.NumRowGroups() {
		_, n := s.RowGroupRows(i)
		live += n
	}
	if want := physical - src.NumDeleted(); live != want {
		return corruptSource(src, fmt.Errorf("%w: %d live rows after the deletion vector, numRecords %d - DV cardinality %d = %d",
			ErrLiveRowMismatch, live, physical, src.NumDeleted(), want))
	}
	if live == 0 {
		// Nothing to write: an empty run where the next rows would go (no
		// output is opened for it; see run for a trailing one).
		run := composition.Run{Source: src.Path, SourceNumPhysicalRecords: physical, Output: len(jw.res.Outputs)}
		if jw.cur != nil {
			run.RowOffsetInTarget = jw.cur.rows + jw.packRows
		}
		jw.res.Composition = append(jw.res.Composition, run)
		return nil
	}
	if jw.cur == nil {
		if err := jw.openOutput(ctx); err != nil {
			return err
		}
	}
	jw.res.Composition = append(jw.res.Composition, composition.Run{
		Source:                   src.Path,
		SourceNumPhysicalRecords: physical,
		Output:                   len(jw.res.Outputs),
		RowOffsetInTarget:        jw.cur.rows + jw.packRows,
		LiveRows:                 live,
	})
	jw.pack = append(jw.pack, packedSource{src: src, scan: s})
	jw.packRows += live
	jw.packBytes += src.Size
	jw.res.PackedSources++
	if jw.packBytes >= packBytes(jw.opts) || jw.curSize()+jw.packBytes >= jw.target {
		// Written in the background while the next sources are opened.
		return jw.submitPack()
	}
	return nil
}

// packBytes bounds a pack's source bytes, and the source bytes of one
// output row group it writes: RowGroupBytes / 4 (16 MiB by default). The
// packed sources stay open (small ones are held in memory whole) until the
// pack is written; bench/rewrite.sh measured peak RSS 356 MiB with packs of
// RowGroupBytes, 250 MiB with half and 202 MiB with a quarter, at the same
// throughput.
func packBytes(o Options) int64 { return max(1, o.RowGroupBytes/4) }

// packUnit is one source row group of a pack.
type packUnit struct {
	p     *packedSource
	rg    int
	live  int64
	bytes int64
}

// flushPack writes the pack into the open output and waits until every
// row group in flight is in it: the output is then the job goroutine's to
// write rows into, copy row groups into or close.
func (jw *jobWriter) flushPack() error {
	if err := jw.submitPack(); err != nil {
		return err
	}
	if jw.enc == nil {
		return nil
	}
	if err := jw.enc.wait(); err != nil {
		return err
	}
	if jw.cur != nil {
		jw.cur.inFlight = 0
		jw.cur.flushedSize = jw.cur.pw.Size()
	}
	return nil
}

// curSize is the open output's size (see colEncoder.size).
func (jw *jobWriter) curSize() int64 {
	if jw.enc == nil {
		return jw.cur.size()
	}
	return jw.enc.size(jw.cur)
}

// submitPack hands the pack to the column encoder, in source order, as
// output row groups of up to packBytes of source and RowGroupRows rows.
func (jw *jobWriter) submitPack() error {
	if len(jw.pack) == 0 {
		return nil
	}
	if jw.enc == nil {
		jw.enc = newColEncoder(len(jw.schema.Columns()), jw.opts.encodeHook)
	}
	// The encoder owns the pack's sources now; the next pack is a new one.
	pack := jw.pack
	jw.pack, jw.packRows, jw.packBytes = nil, 0, 0
	limit := packBytes(jw.opts)
	var group []packUnit
	var groupBytes, groupRows int64
	for i := range pack {
		p := &pack[i]
		meta := p.scan.File().Metadata().RowGroups
		for rg := range p.scan.NumRowGroups() {
			n, live := p.scan.RowGroupRows(rg)
			u := packUnit{p: p, rg: rg, live: live, bytes: rowGroupBytes(meta, rg)}
			if len(group) > 0 && (groupBytes+u.bytes > limit || groupRows+n > jw.opts.RowGroupRows) {
				if err := jw.enc.submit(jw.cur, group); err != nil {
					return err
				}
				group, groupBytes, groupRows = nil, 0, 0
			}
			group = append(group, u)
			groupBytes += u.bytes
			groupRows += n
		}
	}
	if len(group) > 0 {
		return jw.enc.submit(jw.cur, group)
	}
	return nil
}

// rowGroupBytes is the compressed size of row group i in a footer.
func rowGroupBytes(meta []format.RowGroup, i int) int64 {
	if i >= len(meta) {
		return 0
	}
	size := meta[i].TotalCompressedSize
	if size == 0 {
		for _, c := range meta[i].Columns {
			size += c.MetaData.TotalCompressedSize
		}
	}
	return size
}

// resetPack empties the pack (written, or the job failed).
func (jw *jobWriter) resetPack() {
	clear(jw.pack)
	jw.pack, jw.packRows, jw.packBytes = jw.pack[:0], 0, 0
}

// writeColumn converts column c of every unit into cw, counting its rows.
func writeColumn(cw *parquet.ColumnWriter, c int, units []packUnit, scratch *deltascan.ColumnScratch, obs deltascan.ColumnObserver, rows *int64) (err error) {
	defer pq.RecoverParquet(&err)
	for _, u := range units {
		err := u.p.scan.ReadColumn(u.rg, c, scratch, obs, func(vals []parquet.Value) error {
			n, err := cw.WriteRowValues(vals)
			*rows += int64(n)
			if err != nil {
				return fmt.Errorf("write column %d: %w", c, err)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("source %s: %w", u.p.src.Path, err)
		}
	}
	return nil
}

// commitRowGroup appends a finished row group to its file.
func commitRowGroup(rgw *parquet.ConcurrentRowGroupWriter) (n int64, err error) {
	defer pq.RecoverParquet(&err)
	return rgw.Commit()
}
