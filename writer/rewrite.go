package writer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"gocloud.dev/blob"

	"github.com/compactord/compactord/composition"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/pq"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/attempt"
)

// ErrLiveRowMismatch means a source yielded a different number of live rows
// than its physical row count minus its deletion-vector cardinality: the
// composition would be wrong, so the job fails.
var ErrLiveRowMismatch = errors.New("live row count does not match numRecords minus DV cardinality")

// ErrStatsContradictFooter means a source's statistics give a numRecords
// other than its parquet footer's row count: its deletion vector cannot be
// trusted to index its rows, so the file is not rewritten.
var ErrStatsContradictFooter = errors.New("statistics contradict the parquet footer")

// Rewrite streams the live rows of job's sources, in order, into new parquet
// files under the table root and returns what it wrote. It tracks every
// object key in objs before creating the object, and deletes nothing: on
// error, and for a result that is never committed, the caller that owns objs
// cleans up (attempt.Objects.Clean). It never commits.
func Rewrite(ctx context.Context, t *delta.Table, snap *delta.Snapshot, job *Job, objs *attempt.Objects, opts Options) (*Result, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	if job == nil || len(job.Sources) == 0 {
		return nil, errors.New("writer: job has no sources")
	}
	if objs == nil {
		return nil, fmt.Errorf("writer: job %s: no attempt.Objects to track its outputs in", job.ID)
	}
	res := &Result{Job: job}
	jw, err := newJobWriter(t, snap, job, objs, opts, res)
	if err != nil {
		return nil, fmt.Errorf("writer: job %s: %w", job.ID, err)
	}
	run := jw.run
	if job.Sort != nil {
		run = jw.runSorted // sorted (zcube) rewrites: see sort.go (engineer I)
	}
	if err := run(ctx); err != nil {
		_ = res.Origins.Close() // a sorted job's permutation is of no use now
		return nil, fmt.Errorf("writer: job %s: %w", job.ID, err)
	}
	return res, nil
}

// RewriteAll runs jobs concurrently, at most opts.MaxConcurrentJobs at once,
// tracking every object in objs. results[i] is the result of jobs[i], nil
// when that job failed; the error joins every job's error. Nothing is
// deleted: the owner of objs cleans up whatever is not committed.
func RewriteAll(ctx context.Context, t *delta.Table, snap *delta.Snapshot, jobs []*Job, objs *attempt.Objects, opts Options) ([]*Result, error) {
	results := make([]*Result, len(jobs))
	errs := make([]error, len(jobs))
	err := RewriteEach(ctx, t, snap, jobs, objs, opts, func(i int, r *Result, err error) {
		results[i], errs[i] = r, err
	})
	if err != nil {
		return nil, err
	}
	return results, errors.Join(errs...)
}

// RewriteEach runs jobs like RewriteAll (at most opts.MaxConcurrentJobs at
// once, every object tracked in objs, nothing deleted) and hands each job's
// outcome to done as soon as that job ends: its index in jobs and its result,
// or nil and its error (also for a job never started because ctx ended).
// done is called exactly once per job, in any order, never concurrently,
// and never after RewriteEach returned; it should not block for long, since
// the job's slot is held until it returns. The error is only that of
// invalid options, before any job ran (done is then never called).
func RewriteEach(ctx context.Context, t *delta.Table, snap *delta.Snapshot, jobs []*Job, objs *attempt.Objects, opts Options, done func(i int, r *Result, err error)) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	opts = opts.withDefaults()
	var mu sync.Mutex
	report := func(i int, r *Result, err error) {
		mu.Lock()
		defer mu.Unlock()
		done(i, r, err)
	}
	sem := make(chan struct{}, opts.MaxConcurrentJobs)
	var wg sync.WaitGroup
	for i, job := range jobs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			report(i, nil, fmt.Errorf("writer: job %s not started: %w", job.ID, ctx.Err()))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r, err := Rewrite(ctx, t, snap, job, objs, opts)
			report(i, r, err)
		}()
	}
	wg.Wait()
	return nil
}

// jobWriter holds the state of one job while it runs.
type jobWriter struct {
	t      *delta.Table
	snap   *delta.Snapshot
	job    *Job
	opts   Options
	log    hclog.Logger
	res    *Result
	objs   *attempt.Objects
	schema *parquet.Schema
	codec  compress.Codec
	layout layout
	target int64
	pv     map[string]*string

	cur *output // the open output, nil between outputs
	// pack holds small DV-free sources of the data schema whose rows follow
	// the open output's, written together as one row group (pack.go).
	pack                []packedSource
	packRows, packBytes int64
	// enc writes the packs' row groups in the background (encode.go).
	enc  *colEncoder
	rows []parquet.Row
	phys []int64
	// batches carry rows from a source's reading goroutine to the writer.
	batches []*rowBatch
}

func newJobWriter(t *delta.Table, snap *delta.Snapshot, job *Job, objs *attempt.Objects, opts Options, res *Result) (*jobWriter, error) {
	schema, err := dataSchema(snap)
	if err != nil {
		return nil, err
	}
	codec, ext, err := codecFor(opts.Compression)
	if err != nil {
		return nil, err
	}
	if _, ok := codec.(*zstdCodec); ok {
		codec = newZstdCodec(opts.PageBufferSize, opts.ZstdLevel)
	}
	if opts, err = withRowTracking(snap, opts); err != nil {
		return nil, err
	}
	if job.TargetFileSize > 0 {
		opts.TargetFileSize = job.TargetFileSize
	}
	target, err := targetFileSize(opts, snap)
	if err != nil {
		return nil, err
	}
	pv := job.PartitionValues
	if pv == nil {
		pv = job.Sources[0].PartitionValues
	}
	for _, src := range job.Sources {
		if !actions.SamePartitionValues(pv, src.PartitionValues) {
			return nil, fmt.Errorf("source %s is not in the job's partition", src.Path)
		}
	}
	lay, err := newLayout(snap, pv, ext)
	if err != nil {
		return nil, err
	}
	return &jobWriter{
		t: t, snap: snap, job: job, opts: opts, res: res, objs: objs,
		log:    opts.Logger.With("job", job.ID),
		schema: schema, codec: codec, layout: lay, target: target, pv: pv,
		rows:    make([]parquet.Row, opts.BatchRows),
		phys:    make([]int64, opts.BatchRows),
		batches: newBatches(opts.BatchRows),
	}, nil
}

func (jw *jobWriter) run(ctx context.Context) (err error) {
	defer func() {
		if jw.enc != nil {
			// Nothing is written into the output after this.
			if serr := jw.enc.stop(); err == nil {
				err = serr
			}
			jw.enc = nil
		}
		jw.resetPack()
		if jw.cur != nil {
			jw.cur.abandon()
			jw.cur = nil
		}
	}()
	for _, src := range jw.job.Sources {
		if err := ctx.Err(); err != nil {
			return err
		}
		if jw.cur != nil && jw.curSize()+jw.packBytes >= jw.target {
			if err := jw.flushPack(); err != nil {
				return err
			}
			if err := jw.closeOutput(ctx); err != nil {
				return err
			}
		}
		if err := jw.copySource(ctx, src); err != nil {
			if jw.enc != nil && jw.enc.err != nil && errors.Is(err, jw.enc.err) {
				return err // an earlier source's row group failed; it names that source
			}
			return fmt.Errorf("source %s: %w", src.Path, err)
		}
		jw.res.BytesRead += src.Size
		if jw.opts.SourceRead != nil {
			jw.opts.SourceRead(src)
		}
	}
	if err := jw.flushPack(); err != nil {
		return err
	}
	if jw.cur != nil {
		if err := jw.closeOutput(ctx); err != nil {
			return err
		}
	}
	n := len(jw.res.Outputs)
	for i := range jw.res.Composition {
		r := &jw.res.Composition[i]
		switch {
		case n == 0:
			r.Output = -1
		case r.Output == n:
			// Trailing sources without live rows after an output that
			// closed full: an empty run at the end of the last output.
			last := jw.res.Outputs[n-1]
			r.Output, r.RowOffsetInTarget, r.Target = n-1, last.NumRecords, last.Add.Path
		}
	}
	return nil
}

// copySource appends the live rows of src to the current output (opening
// one if needed) and records its run: through the whole-row-group paths
// when it can (copyColumns), else row by row.
func (jw *jobWriter) copySource(ctx context.Context, src *actions.Add) error {
	if !jw.opts.forceScan && !jw.opts.DisableCopyPath {
		done, err := jw.copyColumns(ctx, src)
		if done || err != nil {
			return err
		}
	}
	var scan rowSource
	if !jw.opts.forceScan {
		d, err := openDirect(ctx, jw.t, src, jw.schema, jw.opts)
		if err != nil {
			return err
		}
		if d != nil {
			scan = d
			jw.res.DirectSources++
		}
	}
	if scan == nil {
		s, err := openSource(ctx, jw.t, jw.snap, src, jw.schema, jw.opts)
		if err != nil {
			return fmt.Errorf("open scan: %w", err)
		}
		scan = s
	}
	defer scan.Close()
	physical, err := physicalRecords(src, scan.NumPhysicalRows())
	if err != nil {
		return err
	}
	// Rows of this source follow the packed ones.
	if err := jw.flushPack(); err != nil {
		return err
	}
	run := composition.Run{Source: src.Path, SourceNumPhysicalRecords: physical}
	// Where the run starts: the open output, else the next one to open.
	run.Output = len(jw.res.Outputs)
	if jw.cur != nil {
		run.RowOffsetInTarget = jw.cur.rows
	}
	err = pumpRows(scan, jw.batches, func(rows []parquet.Row) error {
		if jw.cur == nil {
			if err := jw.openOutput(ctx); err != nil {
				return err
			}
		}
		if err := jw.cur.write(rows); err != nil {
			return err
		}
		run.LiveRows += int64(len(rows))
		return nil
	})
	if err != nil {
		return err
	}
	if err := scan.Close(); err != nil {
		return fmt.Errorf("close scan: %w", err)
	}
	if want := physical - src.NumDeleted(); run.LiveRows != want {
		return corruptSource(src, fmt.Errorf("%w: read %d live rows, numRecords %d - DV cardinality %d = %d",
			ErrLiveRowMismatch, run.LiveRows, physical, src.NumDeleted(), want))
	}
	jw.res.Composition = append(jw.res.Composition, run)
	return nil
}

// copyColumns writes src without assembling rows: its row groups copied
// page for page when they are large, of the data schema and nothing is
// deleted, else through the pack (pack.go). It reports false, having
// written nothing, for a source only the row path takes.
func (jw *jobWriter) copyColumns(ctx context.Context, src *actions.Add) (bool, error) {
	s, err := openScan(ctx, jw.t, jw.snap, src, jw.schema, jw.opts)
	if err != nil {
		return false, fmt.Errorf("open scan: %w", err)
	}
	physical, err := physicalRecords(src, s.NumPhysicalRows())
	if err != nil {
		return false, err
	}
	minCopy := jw.opts.RowGroupBytes / 2
	if jw.opts.copyMinBytes > 0 {
		minCopy = jw.opts.copyMinBytes
	}
	if d := directFrom(src, s, jw.schema); d != nil && d.copyable(minCopy) {
		jw.res.DirectSources++
		return true, jw.copyWhole(ctx, src, d, physical)
	}
	if !jw.packable(s) {
		return false, s.Close()
	}
	if s.Identity() {
		jw.res.DirectSources++
	}
	return true, jw.addToPack(ctx, src, s, physical)
}

// copyWhole appends every row group of d page for page and records its run.
func (jw *jobWriter) copyWhole(ctx context.Context, src *actions.Add, d *directSource, physical int64) error {
	if err := jw.flushPack(); err != nil {
		return err
	}
	if jw.cur == nil {
		if err := jw.openOutput(ctx); err != nil {
			return err
		}
	}
	run := composition.Run{Source: src.Path, SourceNumPhysicalRecords: physical, Output: len(jw.res.Outputs), RowOffsetInTarget: jw.cur.rows}
	n, err := jw.cur.copyRowGroups(d)
	if err != nil {
		return err
	}
	run.LiveRows = n
	jw.res.CopiedRowGroups += len(d.rowGroups)
	if want := physical - src.NumDeleted(); run.LiveRows != want {
		return corruptSource(src, fmt.Errorf("%w: copied %d rows, numRecords %d - DV cardinality %d = %d",
			ErrLiveRowMismatch, run.LiveRows, physical, src.NumDeleted(), want))
	}
	jw.res.Composition = append(jw.res.Composition, run)
	return nil
}

// physicalRecords is the source's physical row count: stats numRecords when
// present, else the parquet footer's. Both must agree when both exist:
// reconciliation indexes deletion vectors by physical row.
func physicalRecords(src *actions.Add, footer int64) (int64, error) {
	stats, ok, err := src.NumRecords()
	if err != nil {
		return 0, err
	}
	if !ok {
		return footer, nil
	}
	if stats != footer {
		// The file contradicts itself: skip it (quarantine), keep the table moving.
		return 0, corruptSource(src, fmt.Errorf("%w: stats numRecords %d but the parquet footer has %d rows", ErrStatsContradictFooter, stats, footer))
	}
	return stats, nil
}

func (jw *jobWriter) openOutput(ctx context.Context) error {
	key := jw.layout.key(len(jw.res.Outputs))
	stats, err := newStats(jw.snap, jw.schema)
	if err != nil {
		return err
	}
	jw.objs.Track(key)
	o, err := newOutput(ctx, jw.t.Bucket, key, jw.schema, jw.codec, jw.opts, stats)
	if err != nil {
		return err
	}
	jw.cur = o
	jw.log.Debug("output opened", "key", key)
	return nil
}

func (jw *jobWriter) closeOutput(ctx context.Context) error {
	o := jw.cur
	jw.cur = nil
	statsJSON, err := o.finish()
	if err != nil {
		return err
	}
	attrs, err := jw.t.Bucket.Attributes(ctx, o.key)
	if err != nil {
		return fmt.Errorf("stat output %s: %w", o.key, err)
	}
	if attrs.Size != o.cw.N {
		return fmt.Errorf("output %s: object has %d bytes, wrote %d", o.key, attrs.Size, o.cw.N)
	}
	mtime := attrs.ModTime.UnixMilli()
	if attrs.ModTime.IsZero() {
		mtime = time.Now().UnixMilli()
	}
	add := &actions.Add{
		Path:             actions.EncodePath(o.key),
		PartitionValues:  maps.Clone(jw.pv),
		Size:             attrs.Size,
		ModificationTime: mtime,
		DataChange:       false,
		Stats:            statsJSON,
		Tags:             maps.Clone(jw.job.Tags),
	}
	if add.PartitionValues == nil {
		add.PartitionValues = map[string]*string{}
	}
	if jw.job.ClusteringProvider != "" {
		p := jw.job.ClusteringProvider
		add.ClusteringProvider = &p
	}
	for i := range jw.res.Composition {
		if r := &jw.res.Composition[i]; r.Output == len(jw.res.Outputs) {
			r.Target = add.Path
		}
	}
	jw.res.Outputs = append(jw.res.Outputs, Output{Add: add, Key: o.key, NumRecords: o.rows})
	jw.res.BytesWritten += attrs.Size
	jw.log.Debug("output written", "key", o.key, "rows", o.rows, "bytes", attrs.Size)
	return nil
}

// output is one parquet file being written to the object store.
type output struct {
	key    string
	cancel context.CancelFunc
	bw     *blob.Writer
	cw     *pq.CountingWriter
	pw     *parquet.Writer
	stats  statsSink
	opts   Options
	// rgws build the row groups written column by column (encode.go),
	// groups of them so far; parts[i] collects the statistics of the
	// group rgws[i] holds, merged into stats when it is committed.
	rgws   []*parquet.ConcurrentRowGroupWriter
	parts  []statsSink
	groups int
	// sized is the size before the row groups in flight, inFlight their
	// source bytes (encode.go).
	sized, inFlight int64
	// rows counts the rows written, and those in flight.
	rows int64
	// flushedSize is pw.Size() right after the last row-group flush.
	flushedSize int64
}

func newOutput(ctx context.Context, b *blob.Bucket, key string, schema *parquet.Schema, codec compress.Codec, opts Options, stats statsSink) (*output, error) {
	wctx, cancel := context.WithCancel(ctx)
	bw, err := b.NewWriter(wctx, key, &blob.WriterOptions{ContentType: "application/octet-stream"})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("create %s: %w", key, err)
	}
	cw := &pq.CountingWriter{W: bw}
	wopts := []parquet.WriterOption{
		parquet.Compression(codec),
		parquet.PageBufferSize(opts.PageBufferSize),
		parquet.MaxRowsPerRowGroup(opts.RowGroupRows),
		parquet.CreatedBy("compactord", "dev", ""),
		// Per-page min/max go to the column index only, as parquet-mr
		// (Spark, Databricks) writes them: page header statistics would
		// compute every page's bounds a second time for readers that skip
		// pages by the column index.
		parquet.DataPageStatistics(false),
	}
	if !opts.InMemoryPages {
		wopts = append(wopts, parquet.ColumnPageBuffers(spillPool{dir: opts.SpillDir}))
	}
	pw := parquet.NewWriter(cw, append([]parquet.WriterOption{schema}, wopts...)...)
	return &output{key: key, cancel: cancel, bw: bw, cw: cw, pw: pw, stats: stats, opts: opts}, nil
}

// size is the output's current size estimate (written bytes plus buffered
// row group, uncompressed values counted at full size).
func (o *output) size() int64 { return o.pw.Size() }

func (o *output) write(rows []parquet.Row) error {
	for _, r := range rows {
		if err := o.stats.Observe(r); err != nil {
			return fmt.Errorf("stats for %s: %w", o.key, err)
		}
	}
	if _, err := o.pw.WriteRows(rows); err != nil {
		return fmt.Errorf("write %s: %w", o.key, err)
	}
	o.rows += int64(len(rows))
	if o.pw.Size()-o.flushedSize >= o.opts.RowGroupBytes {
		if err := o.pw.Flush(); err != nil {
			return fmt.Errorf("flush row group of %s: %w", o.key, err)
		}
		o.flushedSize = o.pw.Size()
	}
	return nil
}

// copyRowGroups appends every row group of a DV-free, schema-identical
// source as a whole row group: parquet-go copies the compressed pages
// verbatim when codec, encodings and page version match, else re-encodes
// column by column; either way no row is assembled for the write. The
// statistics columns are decoded once, column by column, for the Delta
// statistics.
func (o *output) copyRowGroups(d *directSource) (int64, error) {
	var total int64
	for i, rg := range d.rowGroups {
		if err := o.stats.ObserveRowGroup(rg); err != nil {
			return total, fmt.Errorf("%s: row group %d: %w", d.key, i, err)
		}
		n, err := o.pw.WriteRowGroup(rg)
		if err != nil {
			return total, fmt.Errorf("copy row group %d of %s into %s: %w", i, d.key, o.key, err)
		}
		if n != rg.NumRows() {
			return total, fmt.Errorf("copy row group %d of %s into %s: wrote %d of %d rows", i, d.key, o.key, n, rg.NumRows())
		}
		total += n
		o.rows += n
		o.flushedSize = o.pw.Size()
	}
	return total, nil
}

// finish closes the parquet writer and the object and returns the stats JSON.
func (o *output) finish() (string, error) {
	defer o.cancel()
	if err := o.pw.Close(); err != nil {
		o.abandon()
		return "", fmt.Errorf("close parquet %s: %w", o.key, err)
	}
	if err := o.bw.Close(); err != nil {
		return "", fmt.Errorf("close object %s: %w", o.key, err)
	}
	s, err := o.stats.Finish()
	if err != nil {
		return "", fmt.Errorf("stats for %s: %w", o.key, err)
	}
	return s, nil
}

// abandon aborts the object write (the canceled context makes the blob
// writer discard it; the attempt's owner deletes anything that still landed).
func (o *output) abandon() {
	o.cancel()
	_ = o.bw.Close()
}

// corruptSource names src as a data file whose content contradicts its add
// action (class Quarantine: the next run skips it).
func corruptSource(src *actions.Add, err error) error {
	return &failure.CorruptFileError{Kind: failure.DataFile, Path: src.Path, DataFile: src.Path, Err: err}
}
