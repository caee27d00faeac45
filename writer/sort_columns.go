package writer

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	deltascan "github.com/compactord/compactord/delta/scan"

	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/pq"
	"github.com/compactord/compactord/internal/curve"
	"github.com/compactord/compactord/internal/keysort"
)

// The column path of a sorted rewrite. No row is assembled:
//
//  1. every source is opened by the Delta core's FileScan and its
//     clustering columns are read column by column (ReadColumn: types
//     widened, levels translated, deleted rows dropped) into compact
//     column buffers (colBuf), one per column, in read order;
//  2. the samples are drawn from those values in the row path's order (so
//     the buckets are the row path's), each row's curve key computed from
//     them in parallel, and the (key, ordinal) entries sorted (sortEntries:
//     parallel radix sort and merge); the order is the row path's (key,
//     source, physical row) order;
//  3. every output, and every row group of it, is opened at once; GOMAXPROCS
//     workers take one column each (clustering columns first, their buffers
//     already read, then the largest): read it whole into a buffer, gather
//     it by the permutation into each row group's column writer (parquet-go
//     encodes and compresses it there), fold its statistics; one more task,
//     beside them, fills the origin map from the permutation (no second
//     pass over the data);
//  4. the row groups are committed in order, the outputs closed.
//
// Memory is the entries (16 bytes per row, twice while sorting), the open
// sources (small ones held whole) and one column buffer per worker plus the
// clustering columns', estimated before anything is written. A job
// estimated over SortOptions.ColumnMemoryBytes spills sorted runs to temp
// files and merges them (sort_spill.go); one the path cannot take
// (repeated or INT96 columns, keys over 8 bytes, more than 2^32 rows,
// DisableCopyPath) goes row by row through the external sort.

// gatherBatch is the number of values gathered per column writer call.
const gatherBatch = 4096

// sortedSource is one source of a column-path sorted job.
type sortedSource struct {
	src   *actions.Add
	scan  *deltascan.FileScan
	index int   // in Job.Sources
	start int64 // ordinal of its first live row
	live  int64
	dels  []int64 // deleted physical rows, ascending; nil when none
	// colBytes is the uncompressed bytes of each data-schema column in
	// the source's footer (0 for a column it does not hold).
	colBytes []int64
	identity bool // the scan reads the file as it is (FileScan.Identity)
}

// phys is the physical row of the source's live row l (0-based): l plus
// the deleted rows before it (dels[i] - i is the number of live rows
// before the i-th deleted one).
func (s *sortedSource) phys(l int64) int64 {
	if len(s.dels) == 0 {
		return l
	}
	k := sort.Search(len(s.dels), func(i int) bool { return s.dels[i]-int64(i) > l })
	return l + int64(k)
}

// columnSortable reports whether the data schema and options allow the
// column path.
func (jw *jobWriter) columnSortable(enc *curve.Encoder) bool {
	if jw.opts.DisableCopyPath || jw.opts.forceScan || enc.KeyLen() > 8 {
		return false
	}
	for _, p := range jw.schema.Columns() {
		leaf, ok := jw.schema.Lookup(p...)
		if !ok || leaf.MaxRepetitionLevel > 0 || leaf.MaxDefinitionLevel > math.MaxUint8 || !colBufKind(leaf.Node.Type().Kind()) {
			return false
		}
	}
	return true
}

// runSortedColumns runs the job on the column path, reporting false (and
// having written nothing) when the path cannot take it.
func (jw *jobWriter) runSortedColumns(ctx context.Context, so SortOptions, cols []*sortColumn, enc *curve.Encoder) (done bool, err error) {
	if !jw.columnSortable(enc) {
		return false, nil
	}
	direct := jw.res.DirectSources
	t0 := time.Now()
	// Sources whose bytes alone pass the bound are counted and closed: the
	// job spills, and its runs open them again.
	var srcBytes int64
	for _, src := range jw.job.Sources {
		srcBytes += src.Size
	}
	spill := srcBytes > int64(so.ColumnMemoryBytes)
	srcs, rows, err := jw.openSortedSources(ctx, !spill)
	defer func() { closeRun(srcs) }()
	if err != nil {
		return true, err
	}
	if rows > math.MaxUint32 {
		jw.res.DirectSources = direct
		return false, nil
	}
	leaves := make([]parquet.LeafColumn, len(jw.schema.Columns()))
	for c, p := range jw.schema.Columns() {
		leaves[c], _ = jw.schema.Lookup(p...)
	}
	est := jw.columnMemory(srcs, leaves, cols, rows)
	spill = spill || est > int64(so.ColumnMemoryBytes)
	originMem := so.OriginMemoryBytes
	if spill {
		originMem = min(originMem, max(1, so.ColumnMemoryBytes/8))
	}
	jw.res.Origins = NewOriginMap(jw.opts.SpillDir, originMem)
	defer func() {
		if err != nil {
			_ = jw.res.Origins.Close()
			jw.res.Origins = nil
		}
	}()
	n := int(rows)
	if spill {
		// Sorted runs on disk; the row groups in flight bounded too.
		outs, err := jw.planSortedOutputs(srcs, n, int64(so.ColumnMemoryBytes)/4)
		if err != nil {
			return true, err
		}
		jw.log.Debug("sorted rewrite spills sorted runs", "estimated_memory", est, "bound", so.ColumnMemoryBytes)
		nruns, err := jw.runSortedSpill(ctx, so, cols, enc, srcs, leaves, rows, outs)
		if err != nil {
			return true, err
		}
		return true, jw.finishSortedColumns(so, cols, enc, srcs, rows, est, nruns)
	}
	outs, err := jw.planSortedOutputs(srcs, n, 0)
	if err != nil {
		return true, err
	}
	dict := dictionaryColumns(srcs, leaves, rows)
	if schema := withDictionaries(jw.schema, dict); schema != nil {
		for _, so := range outs {
			so.schema = schema
		}
	}
	// One output holds every row: its statistics are the sources' values
	// as read (from page bounds where exact), in any order.
	var obs deltascan.ColumnObserver
	if len(outs) == 1 {
		obs = outs[0].stats.columns()
		outs[0].observed = true
	}

	tOpen := time.Now()
	// Clustering columns: read, sampled in read order, bucketed.
	bufs := make([]*colBuf, len(leaves))
	scratch := make([]deltascan.ColumnScratch, len(cols))
	err = runTasks(ctx, len(cols), func(k int) error {
		c := cols[k]
		b, err := readColBuf(srcs, c.index, leaves[c.index].Node.Type().Kind(), leaves[c.index].MaxDefinitionLevel, n, &scratch[k], obs)
		if err != nil {
			return err
		}
		for i := range n {
			if !b.isNull(i) {
				if slot, ok := c.sample.Offer(); ok {
					c.sample.Set(slot, b.value(i)) // built only when taken
				}
			}
		}
		bufs[c.index] = b
		return nil
	})
	if err != nil {
		return true, err
	}
	tRead := time.Now()
	jw.drawBuckets(cols, so)
	tBuckets := time.Now()

	// Keys and the sort.
	entries := make([]sortEntry, n)
	if err := sortedKeys(ctx, srcs, 0, bufs, cols, enc, entries); err != nil {
		return true, err
	}
	tKeys := time.Now()
	keysort.Sort(entries, make([]sortEntry, n), enc.KeyLen(), runtime.GOMAXPROCS(0))
	if err := ctx.Err(); err != nil {
		return true, err
	}
	tSort := time.Now()

	if err := jw.writeSortedColumns(ctx, srcs, outs, obs, leaves, bufs, cols, entries); err != nil {
		return true, err
	}
	if err := jw.finishSortedColumns(so, cols, enc, srcs, rows, est, 0); err != nil {
		return true, err
	}
	for _, d := range dict {
		if d {
			jw.res.Sort.DictionaryColumns++
		}
	}
	jw.log.Debug("sorted rewrite done column by column", "rows", rows, "outputs", len(jw.res.Outputs), "estimated_memory", est,
		"open", tOpen.Sub(t0), "read_clustering", tRead.Sub(tOpen), "buckets", tBuckets.Sub(tRead), "keys", tKeys.Sub(tBuckets),
		"sort", tSort.Sub(tKeys), "write", time.Since(tSort))
	return true, nil
}

// finishSortedColumns checks the rows written and sets the job's sort
// statistics (runs: the sorted runs spilled, 0 in memory).
func (jw *jobWriter) finishSortedColumns(so SortOptions, cols []*sortColumn, enc *curve.Encoder, srcs []*sortedSource, rows, est int64, runs int) error {
	if jw.res.Origins.NumRows() != rows {
		return fmt.Errorf("sort: %d rows in, %d rows out", rows, jw.res.Origins.NumRows())
	}
	for _, s := range srcs {
		jw.res.BytesRead += s.src.Size
		if jw.opts.SourceRead != nil {
			jw.opts.SourceRead(s.src)
		}
	}
	jw.res.Sort = &SortStats{Rows: rows, OriginSpilled: jw.res.Origins.Spilled(), Curve: string(enc.Curve()), KeyBytes: enc.KeyLen(),
		MemoryBound: so.ColumnMemoryBytes, Columnar: true, EstimatedMemory: est, Spills: runs, Runs: runs}
	for _, c := range cols {
		jw.res.Sort.BucketsPerColumn = append(jw.res.Sort.BucketsPerColumn, c.numBuckets)
	}
	return nil
}

// keyBatch is the rows whose coordinates sortedKeys computes at once,
// column by column.
const keyBatch = 2048

// sortedKeys sets entries[i] to row i's curve key, ordinal i and source
// index srcBase plus its index in srcs, computed from the
// clustering columns' buffers in parallel chunks: in each, batches of
// keyBatch rows have their coordinates found column by column, then their
// keys made at once.
func sortedKeys(ctx context.Context, srcs []*sortedSource, srcBase int, bufs []*colBuf, cols []*sortColumn, enc *curve.Encoder, entries []sortEntry) error {
	n := len(entries)
	return keysort.Ranges(n, 1<<14, func(lo, hi int) error {
		coords := make([][]uint32, len(cols))
		for d := range coords {
			coords[d] = make([]uint32, keyBatch)
		}
		keys := make([]uint64, keyBatch)
		// The source of row i: srcs[si], advanced as i passes its end.
		si := sort.Search(len(srcs), func(k int) bool { return srcs[k].start+srcs[k].live > int64(lo) })
		for b0 := lo; b0 < hi; b0 += keyBatch {
			if (b0-lo)%(1<<16) == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			b1 := min(hi, b0+keyBatch)
			for d, c := range cols {
				bucketRows(coords[d][:b1-b0], bufs[c.index], c, b0)
			}
			ks := keys[:b1-b0]
			if err := enc.Keys64(coords, ks); err != nil {
				return err
			}
			for j, k := range ks {
				i := b0 + j
				for int64(i) >= srcs[si].start+srcs[si].live {
					si++
				}
				entries[i] = sortEntry{Key: k, Ref: uint32(i), Src: uint32(srcBase + si)}
			}
		}
		return nil
	})
}

// floatBucket is the bucket of f by c.floatBounds: the number of bounds at
// or below it (every bound for a NaN, as curve.UpperBound counts).
func (c *sortColumn) floatBucket(f float64) uint32 {
	if f != f {
		return uint32(c.floatBounds.Len())
	}
	return c.floatBounds.UpperBound(curve.FloatKey(f))
}

// bucketRows sets dst[j] to the bucket of row lo+j of b, a buffer of
// clustering column c (nulls in curve.NullBucket): one loop per kind of
// boundaries.
func bucketRows(dst []uint32, b *colBuf, c *sortColumn, lo int) {
	switch {
	case c.intBounds != nil && b.kind == parquet.Int64:
		for j, x := range b.bits[lo : lo+len(dst)] {
			dst[j] = c.intBounds.UpperBound(int64(x))
		}
	case c.intBounds != nil && b.kind == parquet.Int32:
		for j, x := range b.words[lo : lo+len(dst)] {
			dst[j] = c.intBounds.UpperBound(int64(int32(x)))
		}
	case c.floatBounds != nil && b.kind == parquet.Double:
		for j, x := range b.bits[lo : lo+len(dst)] {
			dst[j] = c.floatBucket(math.Float64frombits(x))
		}
	case c.floatBounds != nil && b.kind == parquet.Float:
		for j, x := range b.words[lo : lo+len(dst)] {
			dst[j] = c.floatBucket(float64(math.Float32frombits(x)))
		}
	default:
		for j := range dst {
			i := lo + j
			switch {
			case b.isNull(i):
				dst[j] = curve.NullBucket
			case c.bucketInt != nil:
				dst[j] = c.bucketInt(b.int64At(i))
			case c.bucketFloat != nil:
				dst[j] = c.bucketFloat(b.float64At(i))
			default:
				dst[j] = c.bucket(b.value(i))
			}
		}
		return
	}
	if b.defs != nil {
		for j, d := range b.defs[lo : lo+len(dst)] {
			if int(d) < b.maxDef {
				dst[j] = curve.NullBucket
			}
		}
	}
}

// openSortedSources opens every source's scan (in parallel) and checks its
// live rows like the row path; the scans opened are returned (to close)
// even with an error.
func (jw *jobWriter) openSortedSources(ctx context.Context, keepOpen bool) ([]*sortedSource, int64, error) {
	ncols := len(jw.schema.Columns())
	opened := make([]*sortedSource, len(jw.job.Sources))
	err := runTasks(ctx, len(jw.job.Sources), func(i int) error {
		src := jw.job.Sources[i]
		s, err := openScan(ctx, jw.t, jw.snap, src, jw.schema, jw.opts)
		if err != nil {
			return fmt.Errorf("source %s: open scan: %w", src.Path, err)
		}
		ss := &sortedSource{src: src, scan: s, index: i, colBytes: make([]int64, ncols)}
		opened[i] = ss
		for c := range ncols {
			if sc := s.SourceColumn(c); sc >= 0 {
				for _, rg := range s.File().Metadata().RowGroups {
					if sc < len(rg.Columns) {
						ss.colBytes[c] += rg.Columns[sc].MetaData.TotalUncompressedSize
					}
				}
			}
		}
		physical, err := physicalRecords(src, s.NumPhysicalRows())
		if err != nil {
			return fmt.Errorf("source %s: %w", src.Path, err)
		}
		for rg := range s.NumRowGroups() {
			_, live := s.RowGroupRows(rg)
			ss.live += live
		}
		if want := physical - src.NumDeleted(); ss.live != want {
			return fmt.Errorf("source %s: %w", src.Path, corruptSource(src, fmt.Errorf("%w: %d live rows after the deletion vector, numRecords %d - DV cardinality %d = %d",
				ErrLiveRowMismatch, ss.live, physical, src.NumDeleted(), want)))
		}
		if dv := s.DeletionVector(); dv != nil && !dv.IsEmpty() {
			for _, x := range dv.ToArray() {
				ss.dels = append(ss.dels, int64(x))
			}
		}
		ss.identity = s.Identity()
		if !keepOpen {
			ss.scan = nil
			return s.Close()
		}
		return nil
	})
	srcs := make([]*sortedSource, 0, len(opened))
	var rows int64
	for _, ss := range opened {
		if ss == nil {
			continue
		}
		ss.start = rows
		rows += ss.live
		if ss.identity {
			jw.res.DirectSources++
		}
		srcs = append(srcs, ss)
	}
	if err == nil && len(srcs) != len(opened) {
		err = ctx.Err() // runTasks skips what is left once ctx ends
	}
	return srcs, rows, err
}

// columnMemory estimates the column path's memory: the entries and their
// sort scratch, the sources (objects small enough are held whole), the
// clustering columns' buffers and one more buffer per worker.
func (jw *jobWriter) columnMemory(srcs []*sortedSource, leaves []parquet.LeafColumn, cols []*sortColumn, rows int64) int64 {
	est := rows * 2 * 16
	colBytes := make([]int64, len(leaves))
	for _, s := range srcs {
		est += s.src.Size
		for c := range leaves {
			colBytes[c] += s.colBytes[c]
		}
	}
	for c, l := range leaves {
		per := int64(8)
		switch l.Node.Type().Kind() {
		case parquet.Int32, parquet.Float:
			per = 4 // the values' bits, counted per row
			colBytes[c] = 0
		case parquet.ByteArray, parquet.FixedLenByteArray:
			per = 4 // an offset; the bytes are the sources' uncompressed ones
		default:
			colBytes[c] = 0
		}
		if l.MaxDefinitionLevel > 0 {
			per++
		}
		colBytes[c] += rows * per
	}
	for _, c := range cols {
		est += colBytes[c.index]
	}
	slices.SortFunc(colBytes, func(a, b int64) int { return cmp.Compare(b, a) })
	for _, b := range colBytes[:min(len(colBytes), runtime.GOMAXPROCS(0))] {
		est += b
	}
	return est
}

// sortedOutput is one output of a column-path job: rows [lo, hi) of the
// sorted entries, in row groups starting at groups[i] (ends at hi).
type sortedOutput struct {
	o      *output
	stats  statsSink
	lo, hi int
	groups []int
	rgws   []*parquet.ConcurrentRowGroupWriter
	// observed: the statistics are folded as the columns are read.
	observed bool
	// schema, when not nil, is the data schema with the encodings the
	// output's columns are written in (withDictionaries).
	schema *parquet.Schema
}

// planSortedOutputs splits n sorted rows into outputs of about the target
// size and those into row groups of about RowGroupBytes (and at most
// rgBytes when not 0; at most RowGroupRows), sizing rows by the sources'
// bytes per live row.
func (jw *jobWriter) planSortedOutputs(srcs []*sortedSource, n int, rgBytes int64) ([]*sortedOutput, error) {
	var bytes int64
	for _, s := range srcs {
		bytes += s.src.Size
	}
	perRow := max(1, float64(bytes)/float64(max(1, n)))
	outRows := max(1, int(float64(jw.target)/perRow))
	groupBytes := jw.opts.RowGroupBytes
	if rgBytes > 0 {
		groupBytes = min(groupBytes, rgBytes)
	}
	rgRows := int(min(jw.opts.RowGroupRows, max(1, int64(float64(groupBytes)/perRow))))
	var outs []*sortedOutput
	for lo := 0; lo < n; lo += outRows {
		stats, err := newStats(jw.snap, jw.schema)
		if err != nil {
			return nil, err
		}
		so := &sortedOutput{stats: stats, lo: lo, hi: min(n, lo+outRows)}
		for g := so.lo; g < so.hi; g += rgRows {
			so.groups = append(so.groups, g)
		}
		outs = append(outs, so)
	}
	return outs, nil
}

// openSortedOutput creates the i-th sorted output (its key tracked in the
// attempt first), written with opts (the job's, or the spilling path's
// smaller pages), and keeps it in so.
func (jw *jobWriter) openSortedOutput(ctx context.Context, i int, so *sortedOutput, opts Options) (*output, error) {
	key := jw.layout.key(i)
	jw.objs.Track(key)
	schema := jw.schema
	if so.schema != nil {
		schema = so.schema
	}
	o, err := newOutput(ctx, jw.t.Bucket, key, schema, jw.codec, opts, so.stats)
	if err != nil {
		return nil, err
	}
	so.o = o
	return o, nil
}

// writeSortedColumns writes the sorted rows column by column (see the top
// of the file), fills the origin map and closes the outputs.
func (jw *jobWriter) writeSortedColumns(ctx context.Context, srcs []*sortedSource, outs []*sortedOutput, obs deltascan.ColumnObserver, leaves []parquet.LeafColumn, bufs []*colBuf, cols []*sortColumn, entries []sortEntry) (err error) {
	defer func() {
		for _, so := range outs {
			if so.o != nil {
				so.o.abandon()
			}
		}
	}()
	for i, so := range outs {
		o, err := jw.openSortedOutput(ctx, i, so, jw.opts)
		if err != nil {
			return err
		}
		for range so.groups {
			so.rgws = append(so.rgws, o.pw.BeginRowGroup())
		}
	}

	// The columns, clustering ones first (already read), then by size.
	order := make([]int, 0, len(leaves))
	for _, c := range cols {
		order = append(order, c.index)
	}
	rest := make([]int, 0, len(leaves))
	cost := make([]int64, len(leaves))
	for c := range leaves {
		if bufs[c] != nil {
			continue
		}
		rest = append(rest, c)
		for _, s := range srcs {
			if src := s.scan.SourceColumn(c); src >= 0 {
				for _, rg := range s.scan.File().Metadata().RowGroups {
					if src < len(rg.Columns) {
						cost[c] += rg.Columns[src].MetaData.TotalUncompressedSize
					}
				}
			}
		}
	}
	slices.SortStableFunc(rest, func(a, b int) int { return cmp.Compare(cost[b], cost[a]) })
	order = append(order, rest...)

	var mu sync.Mutex
	pool := make([]*deltascan.ColumnScratch, 0, runtime.GOMAXPROCS(0))
	t0 := time.Now()
	// The tasks: the columns, then the origin map (last: it is small, and
	// fills a worker that the last columns leave idle).
	err = runTasks(ctx, len(order)+1, func(k int) error {
		if k == len(order) {
			return jw.sortedOrigins(srcs, outs, entries)
		}
		c := order[k]
		b := bufs[c]
		bufs[c] = nil // the task owns it; it goes when the task ends
		if b == nil {
			mu.Lock()
			var sc *deltascan.ColumnScratch
			if len(pool) > 0 {
				sc, pool = pool[len(pool)-1], pool[:len(pool)-1]
			} else {
				sc = &deltascan.ColumnScratch{}
			}
			mu.Unlock()
			var err error
			b, err = readColBuf(srcs, c, leaves[c].Node.Type().Kind(), leaves[c].MaxDefinitionLevel, len(entries), sc, obs)
			mu.Lock()
			pool = append(pool, sc)
			mu.Unlock()
			if err != nil {
				return err
			}
		}
		return gatherColumn(ctx, b, outs, entries)
	})
	if err != nil {
		return err
	}
	jw.log.Debug("sorted columns written", "columns", len(order), "took", time.Since(t0))

	// Commit in order, close.
	for _, so := range outs {
		o := so.o
		for g, rgw := range so.rgws {
			want := int64(so.end(g) - so.groups[g])
			n, err := commitRowGroup(rgw)
			if err != nil {
				return fmt.Errorf("write row group of %s: %w", o.key, err)
			}
			if n != want {
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
	return nil
}

// sortedOrigins fills the origin map from the permutation, output by
// output (each output's rows ended with EndOutput).
func (jw *jobWriter) sortedOrigins(srcs []*sortedSource, outs []*sortedOutput, entries []sortEntry) error {
	srcIdx := make([]uint32, 0, gatherBatch)
	phys := make([]int64, 0, gatherBatch)
	for _, so := range outs {
		for j := so.lo; j < so.hi; j++ {
			ref := int64(entries[j].Ref)
			s := srcs[entries[j].Src]
			srcIdx = append(srcIdx, uint32(s.index))
			phys = append(phys, s.phys(ref-s.start))
			if len(srcIdx) == cap(srcIdx) || j == so.hi-1 {
				if err := jw.res.Origins.addBatch(srcIdx, phys); err != nil {
					return err
				}
				srcIdx, phys = srcIdx[:0], phys[:0]
			}
		}
		if err := jw.res.Origins.EndOutput(int64(so.hi - so.lo)); err != nil {
			return err
		}
	}
	return nil
}

// end is the end of row group g's rows.
func (so *sortedOutput) end(g int) int {
	if g+1 < len(so.groups) {
		return so.groups[g+1]
	}
	return so.hi
}

// gatherColumn writes column b.col of every output row group, in sorted
// order, and folds its statistics.
func gatherColumn(ctx context.Context, b *colBuf, outs []*sortedOutput, entries []sortEntry) (err error) {
	vals := make([]parquet.Value, gatherBatch)
	for _, so := range outs {
		var obs deltascan.ColumnObserver
		if !so.observed {
			obs = so.o.stats.columns()
		}
		for g, rgw := range so.rgws {
			cw := rgw.ColumnWriters()[b.col]
			end := so.end(g)
			for lo := so.groups[g]; lo < end; lo += gatherBatch {
				if err := ctx.Err(); err != nil {
					return err
				}
				hi := min(end, lo+gatherBatch)
				batch := vals[:hi-lo]
				b.gather(batch, entries[lo:hi])
				if obs != nil {
					obs.ObserveColumnValues(b.col, batch)
				}
				if err := writeValues(cw, batch); err != nil {
					return fmt.Errorf("write column %d of %s: %w", b.col, so.o.key, err)
				}
			}
		}
	}
	return nil
}

// writeValues writes whole rows of values into a column writer.
func writeValues(cw *parquet.ColumnWriter, vals []parquet.Value) (err error) {
	defer pq.RecoverParquet(&err)
	n, err := cw.WriteRowValues(vals)
	if err == nil && n != len(vals) {
		err = fmt.Errorf("wrote %d of %d values", n, len(vals))
	}
	return err
}

// runTasks runs fn(0..n-1) on up to GOMAXPROCS goroutines; after the first
// error (or the end of ctx) the tasks not started are skipped, and that
// error is returned.
func runTasks(ctx context.Context, n int, fn func(i int) error) error {
	var next atomic.Int64
	var first atomic.Pointer[error]
	var wg sync.WaitGroup
	for range min(n, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || first.Load() != nil {
					return
				}
				err := ctx.Err()
				if err == nil {
					err = fn(i)
				}
				if err != nil {
					first.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	if p := first.Load(); p != nil {
		return *p
	}
	return nil
}
