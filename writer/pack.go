package writer

import (
	"context"
	"fmt"

	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/composition"
	"github.com/compactord/compactord/delta"
)

// packedSource is a small DV-free source whose schema is the data schema,
// waiting in the job's pack for one row-group write with its neighbours.
type packedSource struct {
	src    *delta.Add
	direct *directSource
}

// packable reports whether a source goes to the pack: no deletion vector,
// the data schema, row groups too small for the copy path (a pack of them
// makes one output row group), and the whole-row-group paths enabled.
func (jw *jobWriter) packable(d *directSource, minCopy int64) bool {
	return d != nil && !jw.opts.DisableCopyPath && d.dv == nil && len(d.rowGroups) > 0 && !d.copyable(minCopy)
}

// addToPack records src's run (its rows will follow the rows already
// written and packed) and queues it; the pack is written when it holds
// packBytes of sources or would fill the output.
func (jw *jobWriter) addToPack(ctx context.Context, src *delta.Add, d *directSource, physical int64) error {
	if jw.cur == nil {
		if err := jw.openOutput(ctx); err != nil {
			return err
		}
	}
	if want := physical - src.NumDeleted(); want != physical {
		return corruptSource(src, fmt.Errorf("%w: numRecords %d - DV cardinality %d, but the source has no deletion vector to apply",
			ErrLiveRowMismatch, physical, src.NumDeleted()))
	}
	jw.res.Composition = append(jw.res.Composition, composition.Run{
		Source:                   src.Path,
		SourceNumPhysicalRecords: physical,
		Output:                   len(jw.res.Outputs),
		RowOffsetInTarget:        jw.cur.rows + jw.packRows,
		LiveRows:                 physical,
	})
	jw.pack = append(jw.pack, packedSource{src: src, direct: d})
	jw.packRows += physical
	jw.packBytes += src.Size
	jw.res.PackedSources++
	if jw.packBytes >= packBytes(jw.opts) || jw.cur.size()+jw.packBytes >= jw.target {
		return jw.flushPack()
	}
	return nil
}

// packBytes bounds a pack's source bytes: RowGroupBytes / 4 (16 MiB by
// default). The packed sources stay open (small ones are held in memory
// whole) while parquet-go re-encodes them, so a pack costs about twice its
// size; bench/rewrite.sh measured peak RSS 356 MiB with packs of
// RowGroupBytes, 250 MiB with half and 202 MiB with a quarter, at the same
// throughput.
func packBytes(o Options) int64 { return max(1, o.RowGroupBytes/4) }

// flushPack writes the pack into the open output as one row group (parquet-go
// re-encodes it column by column: no row is assembled) while folding each
// source into the statistics column by column. Rows keep source order.
func (jw *jobWriter) flushPack() error {
	if len(jw.pack) == 0 {
		return nil
	}
	o := jw.cur
	var rgs []parquet.RowGroup
	for _, p := range jw.pack {
		rgs = append(rgs, p.direct.rowGroups...)
	}
	// The statistics pass and the re-encode read the same sources (their
	// files and object readers are safe for concurrent use) on two cores;
	// only this goroutine touches the statistics until it is done.
	statsDone := make(chan error, 1)
	go func() {
		for _, p := range jw.pack {
			for i, rg := range p.direct.rowGroups {
				if err := o.stats.ObserveRowGroup(rg); err != nil {
					statsDone <- fmt.Errorf("source %s: row group %d: %w", p.src.Path, i, err)
					return
				}
			}
		}
		statsDone <- nil
	}()
	n, err := writeRowGroups(o.pw, rgs)
	if serr := <-statsDone; serr != nil {
		return serr
	}
	if err != nil {
		return jw.packError(o, err)
	}
	if n != jw.packRows {
		return fmt.Errorf("write %d packed sources into %s: wrote %d of %d rows", len(jw.pack), o.key, n, jw.packRows)
	}
	o.rows += n
	o.flushedSize = o.pw.Size()
	jw.resetPack()
	return nil
}

// resetPack empties the pack (written, or the job failed).
func (jw *jobWriter) resetPack() {
	clear(jw.pack)
	jw.pack, jw.packRows, jw.packBytes = jw.pack[:0], 0, 0
}

// writeRowGroups writes rgs, concatenated, through pw; parquet-go panics on
// some corrupt pages, which become errors.
func writeRowGroups(pw *parquet.Writer, rgs []parquet.RowGroup) (n int64, err error) {
	defer delta.RecoverParquet(&err)
	return pw.WriteRowGroup(parquet.MultiRowGroup(rgs...))
}

// packError names the source a failed pack write came from: every packed
// source is read page by page, and the first that fails is reported.
func (jw *jobWriter) packError(o *output, err error) error {
	for _, p := range jw.pack {
		if verr := readAllPages(p.direct); verr != nil {
			return delta.DataFileError(p.src.Path, p.direct.ra, fmt.Errorf("source %s: %w", p.src.Path, verr))
		}
	}
	return fmt.Errorf("write %d packed sources into %s: %w", len(jw.pack), o.key, err)
}

// readAllPages decodes every value of every column of d.
func readAllPages(d *directSource) (err error) {
	defer delta.RecoverParquet(&err)
	buf := make([]parquet.Value, 1024)
	for i, rg := range d.rowGroups {
		for c, cc := range rg.ColumnChunks() {
			err := delta.ReadPages(cc, func(p parquet.Page) error {
				return delta.ReadPageValues(p, buf, func([]parquet.Value) {})
			})
			if err != nil {
				return fmt.Errorf("row group %d column %d: %w", i, c, err)
			}
		}
	}
	return nil
}
