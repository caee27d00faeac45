package writer

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/internal/curve"
)

// Defaults of SortOptions.
const (
	// DefaultSortMemory bounds the rows a sorted rewrite buffers in memory
	// (encoded, plus per-row sort overhead) before spilling to temp files.
	DefaultSortMemory = 64 << 20
	// DefaultSortBuckets is the number of range buckets per clustering
	// column (Spark's range_partition_id(col, 1000)).
	DefaultSortBuckets = 1000
	// DefaultSortSample is the number of values sampled per clustering
	// column to draw the bucket boundaries from.
	DefaultSortSample = 20000
	// DefaultColumnSortMemory bounds the memory the column path of a
	// sorted rewrite (sort_columns.go) may need by its estimate; a job
	// estimated above it spills sorted runs (sort_spill.go).
	DefaultColumnSortMemory = 512 << 20
)

// SortOptions tune sorted (clustering) rewrites. Zero fields mean the
// defaults. The bounds are per job: RewriteAll runs up to
// MaxConcurrentJobs sorted jobs at once, each with its own bounds. The
// per-column samples (SampleSize values each) come on top.
type SortOptions struct {
	// MemoryBytes bounds the rows buffered in memory by the external sort;
	// beyond it sorted runs spill to temp files in Options.SpillDir.
	// 0: DefaultSortMemory.
	MemoryBytes int
	// OriginMemoryBytes bounds the in-memory part of the origin map (12
	// bytes per output row); the rest goes to a temp file.
	// 0: DefaultOriginMemory.
	OriginMemoryBytes int
	// ColumnMemoryBytes bounds the column path (sort_columns.go): a job
	// whose estimated memory (sort entries, open sources, the columns
	// being gathered) is above it sorts runs of sources that fit it and
	// merges them from temp files in Options.SpillDir (sort_spill.go),
	// its output row groups at most a quarter of it in source bytes.
	// 0: DefaultColumnSortMemory.
	ColumnMemoryBytes int
	// Buckets is the number of range buckets per column. 0: DefaultSortBuckets.
	Buckets int
	// SampleSize is the reservoir size per column. 0: DefaultSortSample.
	SampleSize int
	// Seed seeds the reservoirs (fixed for reproducible layouts).
	Seed uint64
}

func (o SortOptions) withDefaults() SortOptions {
	if o.MemoryBytes <= 0 {
		o.MemoryBytes = DefaultSortMemory
	}
	if o.OriginMemoryBytes <= 0 {
		o.OriginMemoryBytes = DefaultOriginMemory
	}
	if o.ColumnMemoryBytes <= 0 {
		o.ColumnMemoryBytes = DefaultColumnSortMemory
	}
	if o.Buckets <= 0 {
		o.Buckets = DefaultSortBuckets
	}
	if o.SampleSize <= 0 {
		o.SampleSize = DefaultSortSample
	}
	return o
}

// SortStats describe the external sort of one sorted job.
type SortStats struct {
	// Rows is the number of rows sorted.
	Rows int64
	// Spills counts chunks spilled to temp files, Runs the sorted runs
	// written to disk and Passes the intermediate merge passes (0 when the
	// runs fit one merge).
	Spills, Runs, Passes int
	// OriginSpilled is set when the origin map went to a temp file.
	OriginSpilled bool
	// BucketsPerColumn is the number of range buckets drawn for each
	// clustering column (fewer than asked when values repeat).
	BucketsPerColumn []int
	// Curve is the curve used ("hilbert", or "zorder" for one column).
	Curve string
	// KeyBytes is the length of a curve key; MemoryBound the sort bound
	// (SortOptions.ColumnMemoryBytes on the column path).
	KeyBytes, MemoryBound int
	// Columnar is set when the job took the column path (sort_columns.go)
	// rather than the external sort of rows; EstimatedMemory is then the
	// estimate it was admitted with.
	Columnar        bool
	EstimatedMemory int64
	// DictionaryColumns is the number of columns the column path wrote
	// dictionary-encoded, as its sources hold them (sort_dict.go).
	DictionaryColumns int
}

// sortColumn is one clustering column of the data schema.
type sortColumn struct {
	name   string
	dim    int // position in the SortSpec (curve dimension)
	index  int // leaf column index in the data schema
	cmp    func(a, b parquet.Value) int
	sample *curve.Reservoir[parquet.Value]
	kind   parquet.Kind
	signed bool // integer kinds: compared as signed numbers
	// plainFloat: a float or double column without a logical type.
	plainFloat bool
	// bucket maps a non-null value to its range bucket.
	bucket     func(parquet.Value) uint32
	numBuckets int
	// bucketInt is bucket for the int64 value of a signed integer column,
	// bucketFloat for the value of a float or double column (compared as
	// the parquet type compares them); nil for other columns.
	bucketInt   func(int64) uint32
	bucketFloat func(float64) uint32
	// intBounds and floatBounds index the boundaries behind bucketInt and
	// bucketFloat (those of floatBounds by curve.FloatKey), for the column
	// path's keys; nil for other columns (and floatBounds when a boundary
	// is NaN).
	intBounds   *curve.BoundIndex
	floatBounds *curve.BoundIndex
}

// runSorted is Rewrite for jobs with a SortSpec: all live rows of the
// sources go through an external sort by (curve key, source, physical row)
// and are written in that order, outputs split at the target size.
func (jw *jobWriter) runSorted(ctx context.Context) (err error) {
	so := jw.opts.Sort.withDefaults()
	cols, err := jw.sortColumns(so)
	if err != nil {
		return err
	}
	enc, err := sortEncoder(jw.job.Sort.Curve, len(cols), so.Buckets)
	if err != nil {
		return err
	}
	if done, err := jw.runSortedColumns(ctx, so, cols, enc); done || err != nil {
		return err
	}
	s := newExtSorter(jw.opts.SpillDir, so.MemoryBytes)
	defer func() {
		if cerr := s.close(); cerr != nil && err == nil {
			err = fmt.Errorf("sort: %w", cerr)
		}
	}()
	jw.res.Origins = NewOriginMap(jw.opts.SpillDir, so.OriginMemoryBytes)
	defer func() {
		if err != nil {
			_ = jw.res.Origins.Close()
			jw.res.Origins = nil
		}
		if jw.cur != nil {
			jw.cur.abandon()
			jw.cur = nil
		}
	}()

	// Phase 1: collect every live row, sampling the clustering columns.
	byIndex := make([]*sortColumn, len(jw.schema.Columns()))
	for _, c := range cols {
		byIndex[c.index] = c
	}
	for i, src := range jw.job.Sources {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := jw.collectSource(ctx, i, src, s, byIndex); err != nil {
			return fmt.Errorf("source %s: %w", src.Path, err)
		}
		jw.res.BytesRead += src.Size
		if jw.opts.SourceRead != nil {
			jw.opts.SourceRead(src)
		}
	}
	jw.drawBuckets(cols, so)

	// Phase 2: key, sort, merge, write.
	coords := make([]uint32, len(cols))
	var vals parquet.Row
	key := func(dst, rec []byte) ([]byte, error) {
		_, _, sv, _, err := recordOrigin(rec)
		if err != nil {
			return dst, err
		}
		if vals, err = decodeRow(vals, sv); err != nil {
			return dst, err
		}
		if len(vals) != len(cols) {
			return dst, fmt.Errorf("sort: record holds %d sort values, want %d", len(vals), len(cols))
		}
		for k, v := range vals {
			coords[k] = curve.NullBucket
			if !v.IsNull() {
				coords[k] = cols[k].bucket(v)
			}
		}
		return enc.AppendKey(dst, coords)
	}
	next, err := s.sorted(ctx, enc.KeyLen(), key)
	if err != nil {
		return err
	}
	if err := jw.writeSorted(ctx, next); err != nil {
		return err
	}
	if jw.res.Origins.NumRows() != s.Rows {
		return fmt.Errorf("sort: %d rows in, %d rows out", s.Rows, jw.res.Origins.NumRows())
	}
	jw.res.Sort = &SortStats{Rows: s.Rows, Spills: s.Spills, Runs: s.Runs, Passes: s.Passes,
		OriginSpilled: jw.res.Origins.Spilled(), Curve: string(enc.Curve()), KeyBytes: enc.KeyLen(), MemoryBound: so.MemoryBytes}
	for _, c := range cols {
		jw.res.Sort.BucketsPerColumn = append(jw.res.Sort.BucketsPerColumn, c.numBuckets)
	}
	jw.log.Debug("sorted rewrite done", "rows", s.Rows, "spills", s.Spills, "runs", s.Runs, "passes", s.Passes, "outputs", len(jw.res.Outputs))
	return nil
}

// drawBuckets sets every clustering column's buckets from its sample.
func (jw *jobWriter) drawBuckets(cols []*sortColumn, so SortOptions) {
	for _, c := range cols {
		n := so.Buckets
		if b := jw.job.Sort.Buckets; c.dim < len(b) && b[c.dim] > 0 {
			n = min(n, b[c.dim])
		}
		c.setBuckets(n)
		c.sample = nil
	}
}

// sortColumns resolves the SortSpec's physical paths in the data schema.
func (jw *jobWriter) sortColumns(so SortOptions) ([]*sortColumn, error) {
	spec := jw.job.Sort
	if len(spec.Columns) == 0 {
		return nil, fmt.Errorf("sort: no clustering columns")
	}
	if len(spec.Columns) > curve.MaxDims {
		return nil, fmt.Errorf("sort: %d clustering columns (at most %d)", len(spec.Columns), curve.MaxDims)
	}
	if len(spec.Buckets) != 0 && len(spec.Buckets) != len(spec.Columns) {
		return nil, fmt.Errorf("sort: %d bucket counts for %d clustering columns", len(spec.Buckets), len(spec.Columns))
	}
	var cols []*sortColumn
	seen := map[int]bool{}
	for k, path := range spec.Columns {
		name := strings.Join(path, ".")
		leaf, ok := jw.schema.Lookup(path...)
		if !ok || leaf.Node == nil || !leaf.Node.Leaf() {
			return nil, fmt.Errorf("sort: clustering column %q is not a leaf column of the data schema", name)
		}
		if leaf.MaxRepetitionLevel > 0 {
			return nil, fmt.Errorf("sort: clustering column %q is repeated", name)
		}
		if seen[leaf.ColumnIndex] {
			return nil, fmt.Errorf("sort: clustering column %q listed twice", name)
		}
		seen[leaf.ColumnIndex] = true
		typ := leaf.Node.Type()
		signed := true
		if lt := typ.LogicalType(); lt != nil {
			if it, ok := lt.Value.(*format.IntType); ok && !it.IsSigned {
				signed = false
			}
		}
		plainFloat := (typ.Kind() == parquet.Float || typ.Kind() == parquet.Double) && typ.LogicalType() == nil
		cols = append(cols, &sortColumn{name: name, dim: k, index: leaf.ColumnIndex, cmp: typ.Compare, kind: typ.Kind(), signed: signed, plainFloat: plainFloat,
			sample: curve.NewReservoir[parquet.Value](so.SampleSize, so.Seed+uint64(k))})
	}
	return cols, nil
}

// setBuckets draws the column's bucket boundaries from its sample. Signed
// integer columns (longs, ints, dates, timestamps) search plain int64
// bounds; other types compare parquet values with the column type's order.
func (c *sortColumn) setBuckets(n int) {
	sample := c.sample.Sample()
	if c.signed && (c.kind == parquet.Int64 || c.kind == parquet.Int32) {
		ints := make([]int64, len(sample))
		for i, v := range sample {
			ints[i] = asInt64(v)
		}
		b := curve.NewBucketizer(ints, n, cmp.Compare[int64])
		c.bucket = func(v parquet.Value) uint32 { return b.Bucket(asInt64(v)) }
		c.bucketInt = b.Bucket
		c.intBounds = curve.NewBoundIndex(b.Bounds())
		c.numBuckets = b.NumBuckets()
		return
	}
	if c.plainFloat {
		fs := make([]float64, len(sample))
		for i, v := range sample {
			fs[i] = asFloat64(v)
		}
		b := curve.NewBucketizer(fs, n, compareFloat)
		c.bucket = func(v parquet.Value) uint32 { return b.Bucket(asFloat64(v)) }
		c.bucketFloat = b.Bucket
		if bounds := b.Bounds(); !slices.ContainsFunc(bounds, math.IsNaN) { // else not ordered by <: the bucketizer's search
			keys := make([]int64, len(bounds))
			for i, f := range bounds {
				keys[i] = curve.FloatKey(f)
			}
			c.floatBounds = curve.NewBoundIndex(keys)
		}
		c.numBuckets = b.NumBuckets()
		return
	}
	b := curve.NewBucketizer(sample, n, c.cmp)
	c.bucket = b.Bucket
	c.numBuckets = b.NumBuckets()
}

// compareFloat orders floats as parquet-go's float and double types do
// (NaN equal to everything), so that the buckets are those the type's
// Compare draws.
func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func asFloat64(v parquet.Value) float64 {
	if v.Kind() == parquet.Float {
		return float64(v.Float())
	}
	return v.Double()
}

func asInt64(v parquet.Value) int64 {
	if v.Kind() == parquet.Int32 {
		return int64(v.Int32())
	}
	return v.Int64()
}

// sortEncoder picks the curve: Z-order when asked or for one column (where
// it is the range id itself), Hilbert otherwise.
func sortEncoder(name string, dims, buckets int) (*curve.Encoder, error) {
	c := curve.Hilbert
	switch strings.ToLower(name) {
	case "", string(curve.Hilbert):
	case string(curve.ZOrder):
		c = curve.ZOrder
	default:
		return nil, fmt.Errorf("sort: unknown curve %q (want hilbert or zorder)", name)
	}
	if dims == 1 {
		c = curve.ZOrder
	}
	e, err := curve.NewEncoder(c, dims, curve.BitsFor(buckets-1))
	if err != nil {
		return nil, fmt.Errorf("sort: %w", err)
	}
	return e, nil
}

// openRowSource opens src the way the unsorted path does: directly when its
// schema is the data schema, else through the Delta core's FileScan.
func (jw *jobWriter) openRowSource(ctx context.Context, src *actions.Add) (rowSource, error) {
	if !jw.opts.forceScan {
		d, err := openDirect(ctx, jw.t, src, jw.schema, jw.opts)
		if err != nil {
			return nil, err
		}
		if d != nil {
			jw.res.DirectSources++
			return d, nil
		}
	}
	s, err := openSource(ctx, jw.t, jw.snap, src, jw.schema, jw.opts)
	if err != nil {
		return nil, fmt.Errorf("open scan: %w", err)
	}
	return s, nil
}

// collectSource feeds the live rows of source i to the sorter and samples
// its clustering values; it checks the live row count like the unsorted path.
func (jw *jobWriter) collectSource(ctx context.Context, i int, src *actions.Add, s *extSorter, cols []*sortColumn) error {
	scan, err := jw.openRowSource(ctx, src)
	if err != nil {
		return err
	}
	defer scan.Close()
	physical, err := physicalRecords(src, scan.NumPhysicalRows())
	if err != nil {
		return err
	}
	var live int64
	sortVals := make(parquet.Row, len(jw.job.Sort.Columns))
	for {
		n, rerr := scan.ReadRows(jw.rows, jw.phys)
		for k := 0; k < n; k++ {
			row := jw.rows[k]
			for d := range sortVals {
				sortVals[d] = parquet.NullValue().Level(0, 0, d)
			}
			for _, v := range row {
				if col := v.Column(); col < len(cols) && cols[col] != nil && !v.IsNull() {
					c := cols[col]
					sortVals[c.dim] = v.Level(0, 1, c.dim)
					c.sample.Add(v.Clone())
				}
			}
			if err := s.add(i, jw.phys[k], sortVals, row); err != nil {
				return err
			}
		}
		live += int64(n)
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return fmt.Errorf("read rows: %w", rerr)
		}
		if n == 0 {
			return fmt.Errorf("read rows: scan returned no rows and no error")
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if err := scan.Close(); err != nil {
		return fmt.Errorf("close scan: %w", err)
	}
	if want := physical - src.NumDeleted(); live != want {
		return corruptSource(src, fmt.Errorf("%w: read %d live rows, numRecords %d - DV cardinality %d = %d",
			ErrLiveRowMismatch, live, physical, src.NumDeleted(), want))
	}
	return nil
}

// writeSorted writes the sorted records to outputs (D's output code),
// recording each row's origin and closing an output once it reaches the
// target size.
func (jw *jobWriter) writeSorted(ctx context.Context, next func() (key, rec []byte, err error)) error {
	batch := jw.rows[:0]
	var arena []byte
	var origins [][2]int64
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if jw.cur == nil {
			if err := jw.openOutput(ctx); err != nil {
				return err
			}
		}
		if err := jw.cur.write(batch); err != nil {
			return err
		}
		for _, o := range origins {
			if err := jw.res.Origins.Add(int(o[0]), o[1]); err != nil {
				return err
			}
		}
		batch, arena, origins = batch[:0], arena[:0], origins[:0]
		if jw.cur.size() >= jw.target {
			return jw.closeSortedOutput(ctx)
		}
		return ctx.Err()
	}
	for {
		_, rec, err := next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		src, phys, _, enc, err := recordOrigin(rec)
		if err != nil {
			return err
		}
		if src < 0 || src >= len(jw.job.Sources) {
			return fmt.Errorf("sort: record names source %d of %d", src, len(jw.job.Sources))
		}
		// The merge reuses its buffers: keep this batch's bytes in arena.
		// Rows decoded before a reallocation keep the old backing array.
		start := len(arena)
		arena = append(arena, enc...)
		k := len(batch)
		if k < cap(batch) {
			batch = batch[:k+1]
		} else {
			batch = append(batch, nil)
		}
		if batch[k], err = decodeRow(batch[k][:0], arena[start:]); err != nil {
			return err
		}
		origins = append(origins, [2]int64{int64(src), phys})
		if len(batch) >= jw.opts.BatchRows {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if jw.cur != nil {
		return jw.closeSortedOutput(ctx)
	}
	return nil
}

func (jw *jobWriter) closeSortedOutput(ctx context.Context) error {
	rows := jw.cur.rows
	if err := jw.closeOutput(ctx); err != nil {
		return err
	}
	return jw.res.Origins.EndOutput(rows)
}
