package writer

import (
	"bufio"
	"cmp"
	"container/heap"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/delta/pq"
	deltascan "github.com/compactord/compactord/delta/scan"
	"github.com/compactord/compactord/internal/curve"
	"github.com/compactord/compactord/internal/keysort"
)

// The column path past its memory bound (SortOptions.ColumnMemoryBytes):
// the sources are cut into runs of consecutive sources whose rows fit the
// bound, and
//
//  1. every run's clustering columns are read and sampled in read order
//     (so the buckets are the in-memory path's), the run's sources closed;
//  2. every run is read again column by column, its keys computed and
//     sorted, and its rows written in that order to an unlinked temp file,
//     each column as the column buffer holds it (sort_runcol.go: no parquet
//     encoding, the columns written in parallel, the largest first), its
//     sorted entries (key, ordinal, source) to another;
//  3. the runs are merged by (key, ordinal), the in-memory path's order, one
//     output row group at a time: the merge of the entries (on a goroutine
//     of its own, one row group ahead) gives each row's run (and its origin,
//     for the origin map), and every column of the row group is written in
//     parallel (the largest first): for each batch of rows, the batch's rows
//     of each run are read from that run's column at once and handed out in
//     the merged order.
//
// Memory is one run (its entries, its open sources, its clustering columns
// and one column buffer per worker), then in the merge the runs' column
// read buffers, the row group's run indices (two row groups' worth) and
// the outputs' column writers: their pages are sized so that those get a
// quarter of the bound (spillOutputPageBytes); their compressed pages wait
// in temp files unless Options.InMemoryPages.

// spillEntrySize is the bytes of one entry in a run's entry file.
const spillEntrySize = 16

// spillRun is one run of a spilling column-path job.
type spillRun struct {
	first, last int   // its sources: srcs[first:last]
	lo          int64 // ordinal of its first row
	rows        int64
	data        *os.File     // its rows, sorted, column by column (sort_runcol.go)
	cols        []runSection // where each column lies in data
	next        atomic.Int64 // the end of the sections reserved in data
	ents        *os.File     // its sorted entries
}

// planSpillRuns cuts srcs into runs of consecutive sources whose estimated
// memory (perRow bytes per row plus the sources' sizes) fits bound, each
// of at least one source.
func planSpillRuns(srcs []*sortedSource, perRow float64, bound int64) []*spillRun {
	var runs []*spillRun
	var cur *spillRun
	var bytes int64
	for i, s := range srcs {
		if cur != nil && float64(cur.rows+s.live)*perRow+float64(bytes+s.src.Size) > float64(bound) {
			cur = nil
		}
		if cur == nil {
			cur = &spillRun{first: i, lo: s.start}
			bytes = 0
			runs = append(runs, cur)
		}
		cur.last = i + 1
		cur.rows += s.live
		bytes += s.src.Size
	}
	return runs
}

// spillPerRow is the column path's memory per row of a run: the entries
// and their sort scratch, the clustering columns' buffers and one column
// buffer per worker.
func (jw *jobWriter) spillPerRow(srcs []*sortedSource, leaves []parquet.LeafColumn, cols []*sortColumn, rows int64) float64 {
	if rows == 0 {
		return 1
	}
	// columnMemory without the sources: the rest is per row.
	var srcBytes int64
	for _, s := range srcs {
		srcBytes += s.src.Size
	}
	return float64(jw.columnMemory(srcs, leaves, cols, rows)-srcBytes) / float64(rows)
}

// openRun opens the scans of run r's sources, as copies of srcs whose
// starts count from the run's first row.
func (jw *jobWriter) openRun(ctx context.Context, srcs []*sortedSource, r *spillRun) ([]*sortedSource, error) {
	out := make([]*sortedSource, r.last-r.first)
	err := runTasks(ctx, len(out), func(i int) error {
		s := srcs[r.first+i]
		scan, err := openScan(ctx, jw.t, jw.snap, s.src, jw.schema, jw.opts)
		if err != nil {
			return fmt.Errorf("source %s: open scan: %w", s.src.Path, err)
		}
		c := *s
		c.scan, c.start = scan, s.start-r.lo
		out[i] = &c
		return nil
	})
	if err != nil {
		closeRun(out)
		return nil, err
	}
	return out, nil
}

func closeRun(srcs []*sortedSource) {
	for _, s := range srcs {
		if s != nil && s.scan != nil {
			_ = s.scan.Close()
		}
	}
}

// readClustering reads the clustering columns of a run's sources into
// bufs (by leaf index), in parallel; sample adds every non-null value to
// its column's reservoir, in read order.
func readClustering(ctx context.Context, srcs []*sortedSource, cols []*sortColumn, leaves []parquet.LeafColumn, rows int, bufs []*colBuf, obs deltascan.ColumnObserver, sample bool) error {
	return runTasks(ctx, len(cols), func(k int) error {
		c := cols[k]
		var scratch deltascan.ColumnScratch
		b, err := readColBuf(srcs, c.index, leaves[c.index].Node.Type().Kind(), leaves[c.index].MaxDefinitionLevel, rows, &scratch, obs)
		if err != nil {
			return err
		}
		if sample {
			for i := range rows {
				if !b.isNull(i) {
					c.sample.Add(b.value(i))
				}
			}
		}
		bufs[c.index] = b
		return nil
	})
}

// runSortedSpill runs a column-path job that does not fit its memory
// bound through sorted runs on disk (see the top of the file). srcs have
// been opened and counted; their scans are closed here.
func (jw *jobWriter) runSortedSpill(ctx context.Context, so SortOptions, cols []*sortColumn, enc *curve.Encoder, srcs []*sortedSource, leaves []parquet.LeafColumn, rows int64, outs []*sortedOutput) (nruns int, err error) {
	perRow := jw.spillPerRow(srcs, leaves, cols, rows)
	closeRun(srcs)
	for _, s := range srcs {
		s.scan = nil
	}
	runs := planSpillRuns(srcs, perRow, int64(so.ColumnMemoryBytes))
	defer func() {
		for _, r := range runs {
			if r.data != nil {
				_ = r.data.Close()
			}
			if r.ents != nil {
				_ = r.ents.Close()
			}
		}
	}()
	// One output holds every row: its statistics are observed as the
	// second pass reads the columns.
	var obs deltascan.ColumnObserver
	if len(outs) == 1 {
		obs = outs[0].stats.columns()
		outs[0].observed = true
	}

	// 1. The samples, run by run in read order.
	t0 := time.Now()
	for _, r := range runs {
		rs, err := jw.openRun(ctx, srcs, r)
		if err != nil {
			return 0, err
		}
		bufs := make([]*colBuf, len(leaves))
		err = readClustering(ctx, rs, cols, leaves, int(r.rows), bufs, nil, true)
		closeRun(rs)
		if err != nil {
			return 0, err
		}
	}
	jw.drawBuckets(cols, so)
	tSample := time.Now()

	// 2. The sorted runs.
	order := spillColumnOrder(srcs, leaves)
	for _, r := range runs {
		if err := jw.writeSpillRun(ctx, srcs, r, cols, enc, leaves, order, obs); err != nil {
			return 0, err
		}
	}

	// 3. The merge.
	tRuns := time.Now()
	wopts := jw.opts
	wopts.PageBufferSize = spillOutputPageBytes(int64(so.ColumnMemoryBytes), len(leaves), jw.opts.PageBufferSize)
	if err := jw.mergeSpillRuns(ctx, srcs, runs, outs, leaves, wopts); err != nil {
		return 0, err
	}
	jw.log.Debug("sorted runs spilled and merged", "runs", len(runs), "rows", rows, "output_page_bytes", wopts.PageBufferSize,
		"sample", tSample.Sub(t0), "write_runs", tRuns.Sub(tSample), "merge", time.Since(tRuns))
	return len(runs), nil
}

// spillWriterPages is about the page buffers one column writer of an
// output holds: the values buffered for its page (with the slack of their
// growth), their encoding and the compressed page.
const spillWriterPages = 4

// spillOutputPageBytes is the page size of a spilling job's outputs: its
// column writers (ncols of them, spillWriterPages pages each) get a
// quarter of the memory bound, with pages of at most maxPage and at least
// 16 KiB.
func spillOutputPageBytes(bound int64, ncols, maxPage int) int {
	p := bound / 4 / int64(spillWriterPages*max(1, ncols))
	return int(max(16<<10, min(int64(maxPage), p)))
}

// writeSpillRun reads run r, sorts it and writes its entries and its
// rows (columns in order, the largest first, in parallel) to temp files.
func (jw *jobWriter) writeSpillRun(ctx context.Context, srcs []*sortedSource, r *spillRun, cols []*sortColumn, enc *curve.Encoder, leaves []parquet.LeafColumn, order []int, obs deltascan.ColumnObserver) (err error) {
	if r.rows == 0 {
		return nil // no rows, no files; the merge never takes from it
	}
	rs, err := jw.openRun(ctx, srcs, r)
	if err != nil {
		return err
	}
	defer closeRun(rs)
	n := int(r.rows)
	bufs := make([]*colBuf, len(leaves))
	if err := readClustering(ctx, rs, cols, leaves, n, bufs, obs, false); err != nil {
		return err
	}
	entries := make([]sortEntry, n)
	if err := sortedKeys(ctx, rs, r.first, bufs, cols, enc, entries); err != nil {
		return err
	}
	lo := uint32(r.lo)
	for i := range entries {
		entries[i].Ref += lo // the job's ordinal: the merge compares across runs
	}
	keysort.Sort(entries, make([]sortEntry, n), enc.KeyLen(), runtime.GOMAXPROCS(0))
	if err := ctx.Err(); err != nil {
		return err
	}

	// The entries.
	if r.ents, err = createSpill(jw.opts.SpillDir, "compactord-sortrun-keys-*"); err != nil {
		return err
	}
	w := bufio.NewWriterSize(r.ents, 64<<10)
	var rec [spillEntrySize]byte
	for i := range entries {
		e := &entries[i]
		binary.LittleEndian.PutUint64(rec[:8], e.Key)
		binary.LittleEndian.PutUint32(rec[8:12], e.Ref)
		binary.LittleEndian.PutUint32(rec[12:], e.Src)
		if _, err := w.Write(rec[:]); err != nil {
			return fmt.Errorf("sort: write run entries: %w", err)
		}
		e.Ref -= lo // the run's ordinal, for the gather
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("sort: write run entries: %w", err)
	}

	// The rows, column by column.
	if r.data, err = createSpill(jw.opts.SpillDir, "compactord-sortrun-*"); err != nil {
		return err
	}
	r.cols = make([]runSection, len(leaves))
	return runTasks(ctx, len(order), func(k int) error {
		c := order[k]
		b := bufs[c]
		bufs[c] = nil
		if b == nil {
			var scratch deltascan.ColumnScratch
			var err error
			b, err = readColBuf(rs, c, leaves[c].Node.Type().Kind(), leaves[c].MaxDefinitionLevel, n, &scratch, obs)
			if err != nil {
				return err
			}
		}
		sec, err := writeRunColumn(r.data, &r.next, b, entries)
		r.cols[c] = sec
		return err
	})
}

// entryReader reads a run's sorted entries.
type entryReader struct {
	r    *bufio.Reader
	left int64
	cur  sortEntry
	run  int
}

func (er *entryReader) advance() (bool, error) {
	if er.left == 0 {
		return false, nil
	}
	var rec [spillEntrySize]byte
	if _, err := io.ReadFull(er.r, rec[:]); err != nil {
		return false, fmt.Errorf("sort: read run entries: %w", err)
	}
	er.cur = sortEntry{Key: binary.LittleEndian.Uint64(rec[:8]), Ref: binary.LittleEndian.Uint32(rec[8:12]), Src: binary.LittleEndian.Uint32(rec[12:])}
	er.left--
	return true, nil
}

// entryHeap orders the runs by their current entries.
type entryHeap []*entryReader

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return keysort.Compare(h[i].cur, h[j].cur) < 0 }
func (h entryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entryHeap) Push(x any)        { *h = append(*h, x.(*entryReader)) }
func (h *entryHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// mergedGroup is one output row group of the merge: the run of each of
// its rows, in order.
type mergedGroup struct {
	out, group int
	seq        []uint32
}

// mergeSpillRuns merges the sorted runs into the outputs, one row group at
// a time, and fills the origin map. The merge of the entries runs one row
// group ahead of the columns (mergeEntries, on a goroutine of its own), so
// the columns of row group g are written while row group g+1's rows are
// merged.
func (jw *jobWriter) mergeSpillRuns(ctx context.Context, srcs []*sortedSource, runs []*spillRun, outs []*sortedOutput, leaves []parquet.LeafColumn, wopts Options) (err error) {
	// Run columns: cols[r][c].
	rcols := make([][]*runColumn, len(runs))
	h := make(entryHeap, 0, len(runs))
	for i, r := range runs {
		if r.rows == 0 {
			continue
		}
		for c, l := range leaves {
			rcols[i] = append(rcols[i], newRunColumn(r.data, r.cols[c], c, l.Node.Type().Kind(), l.MaxDefinitionLevel))
		}
		if _, err := r.ents.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("sort: rewind run entries: %w", err)
		}
		er := &entryReader{r: bufio.NewReaderSize(r.ents, 32<<10), left: r.rows, run: i}
		if ok, err := er.advance(); err != nil {
			return err
		} else if ok {
			h = append(h, er)
		}
	}
	heap.Init(&h)
	defer func() {
		for _, so := range outs {
			if so.o != nil {
				so.o.abandon()
			}
		}
	}()

	// The merge, one row group ahead; two sequences circulate.
	mctx, cancel := context.WithCancel(ctx)
	merged := make(chan mergedGroup, 1)
	free := make(chan []uint32, 2)
	free <- nil
	free <- nil
	var mergeErr error
	mergeDone := make(chan struct{})
	go func() {
		defer close(mergeDone)
		defer close(merged)
		mergeErr = jw.mergeEntries(mctx, srcs, h, outs, free, merged)
	}()
	defer func() {
		cancel()
		<-mergeDone
	}()

	order := spillColumnOrder(srcs, leaves)
	for i, so := range outs {
		o, err := jw.openSortedOutput(ctx, i, so, wopts)
		if err != nil {
			return err
		}
		var colObs deltascan.ColumnObserver
		if !so.observed {
			colObs = o.stats.columns()
		}
		for g := range so.groups {
			mg, ok := <-merged
			if !ok {
				if mergeErr != nil {
					return mergeErr
				}
				return fmt.Errorf("sort: the merge ended before row group %d of output %d", g, i)
			}
			if mg.out != i || mg.group != g {
				return fmt.Errorf("sort: merged row group %d of output %d, want %d of %d", mg.group, mg.out, g, i)
			}
			seq := mg.seq
			rgw := o.pw.BeginRowGroup()
			err := runTasks(ctx, len(order), func(k int) (err error) {
				defer pq.RecoverParquet(&err)
				c := order[k]
				cw := rgw.ColumnWriters()[c]
				vals := make([]parquet.Value, gatherBatch)
				counts := make([]int, len(rcols))
				ident := identityEntries(gatherBatch)
				for b := 0; b < len(seq); b += gatherBatch {
					batch := vals[:min(len(seq)-b, gatherBatch)]
					// The batch's rows of each run, read at once.
					clear(counts)
					for _, r := range seq[b : b+len(batch)] {
						counts[r]++
					}
					for r, n := range counts {
						if n > 0 {
							if err := rcols[r][c].take(n, ident); err != nil {
								return fmt.Errorf("sort: read column %d of a run: %w", c, err)
							}
						}
					}
					for k := range batch {
						batch[k] = rcols[seq[b+k]][c].next()
					}
					if colObs != nil {
						colObs.ObserveColumnValues(c, batch)
					}
					if err := writeValues(cw, batch); err != nil {
						return fmt.Errorf("write column %d of %s: %w", c, o.key, err)
					}
				}
				return nil
			})
			free <- seq
			if err != nil {
				return err
			}
			n, err := commitRowGroup(rgw)
			if err != nil {
				return fmt.Errorf("write row group of %s: %w", o.key, err)
			}
			if want := int64(so.end(g) - so.groups[g]); n != want {
				return fmt.Errorf("write row group %d of %s: wrote %d of %d rows", g, o.key, n, want)
			}
			o.rows += n
			o.stats.addRecords(n)
		}
		jw.cur, so.o = o, nil
		if err := jw.closeOutput(ctx); err != nil {
			return err
		}
	}
	<-mergeDone
	return mergeErr
}

// mergeEntries merges the runs' entries (h, a heap) into the outputs' row
// groups in order, sending each row group's run sequence on merged (in a
// slice taken from free) and filling the origin map; it checks that the
// runs end with the last output.
func (jw *jobWriter) mergeEntries(ctx context.Context, srcs []*sortedSource, h entryHeap, outs []*sortedOutput, free <-chan []uint32, merged chan<- mergedGroup) error {
	srcIdx := make([]uint32, 0, gatherBatch)
	phys := make([]int64, 0, gatherBatch)
	for i, so := range outs {
		for g := range so.groups {
			var seq []uint32
			select {
			case seq = <-free:
			case <-ctx.Done():
				return ctx.Err()
			}
			lo, hi := so.groups[g], so.end(g)
			seq = seq[:0]
			for j := lo; j < hi; j++ {
				if len(h) == 0 {
					return fmt.Errorf("sort: the runs ended at row %d of %d", j, so.hi)
				}
				er := h[0]
				e := er.cur
				seq = append(seq, uint32(er.run))
				s := srcs[e.Src]
				srcIdx = append(srcIdx, uint32(s.index))
				phys = append(phys, s.phys(int64(e.Ref)-s.start))
				if len(srcIdx) == cap(srcIdx) {
					if err := jw.res.Origins.addBatch(srcIdx, phys); err != nil {
						return err
					}
					srcIdx, phys = srcIdx[:0], phys[:0]
				}
				if ok, err := er.advance(); err != nil {
					return err
				} else if ok {
					heap.Fix(&h, 0)
				} else {
					heap.Pop(&h)
				}
			}
			select {
			case merged <- mergedGroup{out: i, group: g, seq: seq}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if len(srcIdx) > 0 {
			if err := jw.res.Origins.addBatch(srcIdx, phys); err != nil {
				return err
			}
			srcIdx, phys = srcIdx[:0], phys[:0]
		}
		if err := jw.res.Origins.EndOutput(int64(so.hi - so.lo)); err != nil {
			return err
		}
	}
	if len(h) != 0 {
		return fmt.Errorf("sort: rows left in the runs after %d outputs", len(outs))
	}
	return nil
}

// spillColumnOrder is the order the columns of a row group are handed to
// the workers: the largest (uncompressed bytes in the sources) first, so
// the last ones to end are small.
func spillColumnOrder(srcs []*sortedSource, leaves []parquet.LeafColumn) []int {
	cost := make([]int64, len(leaves))
	for _, s := range srcs {
		for c := range leaves {
			cost[c] += s.colBytes[c]
		}
	}
	order := make([]int, len(leaves))
	for c := range order {
		order[c] = c
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(cost[b], cost[a]) })
	return order
}
