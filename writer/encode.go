package writer

import (
	"cmp"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	deltascan "github.com/compactord/compactord/delta/scan"

	"github.com/parquet-go/parquet-go"
)

// The column encoder pipelines a job's packed row groups: while the job's
// goroutine opens the next sources and fills the next pack, GOMAXPROCS
// workers read, convert, encode and compress the columns of the row groups
// already submitted (largest columns first), and a committer appends each
// finished row group to its output in order. The columns of the next row
// group start while the last columns of the previous one finish, so the
// cores do not wait at row group boundaries. At most maxGroupsInFlight row
// groups are submitted and not yet committed, which bounds the source
// memory held (each row group is at most packBytes of source).
//
// Each row group in flight folds its columns' statistics into a part of
// its own (distinct columns concurrently), which the committer merges into
// the output's, so the same column of two row groups may be written at
// once and no worker waits for another.
//
// The first column (or commit) failure is kept on the encoder, and the
// workers skip the columns still queued. A row group short of a skipped
// column fails with that first error (a later row group's corrupt source,
// say), not with its own missing rows, so that the job's error names what
// went wrong and still classifies as it (failure.CorruptFileError).

// maxGroupsInFlight bounds the row groups submitted and not yet committed.
const maxGroupsInFlight = 2

// groupWrite is one output row group being written column by column.
type groupWrite struct {
	o        *output
	rgw      *parquet.ConcurrentRowGroupWriter
	stats    statsSink // this group's part of o's statistics
	units    []packUnit
	want     int64        // live rows of the units
	bytes    int64        // source bytes of the units
	order    []int        // columns, largest first
	left     atomic.Int32 // columns not yet done
	written  []int64
	errs     []error
	encoded  chan struct{} // closed when every column is done
	commited chan struct{} // closed when committed (or abandoned); err set before
	err      error
}

// colTask is column c of row group g.
type colTask struct {
	g *groupWrite
	c int
}

// colEncoder runs one job's column tasks and commits its row groups.
type colEncoder struct {
	tasks   chan colTask
	commits chan *groupWrite
	workers sync.WaitGroup
	pending []*groupWrite // submitted, not yet waited for, in order
	// first is the first column or commit failure, nil until one: the
	// workers then skip what is left.
	first atomic.Pointer[error]
	err   error // the first failure waited for; every later group is abandoned
	hook  encodeHook
}

// encodeHook, set by tests only (Options.encodeHook), is called by a worker
// before it takes up column c of g, so that a test may order the workers.
type encodeHook func(e *colEncoder, g *groupWrite, c int)

// errSkipped marks a column that a worker skipped after a failure.
var errSkipped = errors.New("column skipped after a failure")

// newColEncoder starts the workers (GOMAXPROCS, at least two under a test
// hook so that one may be held) and the committer.
func newColEncoder(ncols int, hook encodeHook) *colEncoder {
	e := &colEncoder{
		tasks:   make(chan colTask, maxGroupsInFlight*ncols),
		commits: make(chan *groupWrite, maxGroupsInFlight),
		hook:    hook,
	}
	n := runtime.GOMAXPROCS(0)
	if hook != nil {
		n = max(n, 2)
	}
	for range n {
		e.workers.Go(e.work)
	}
	e.workers.Go(e.commit)
	return e
}

// fail keeps err if it is the encoder's first failure, and makes the
// workers skip the columns left.
func (e *colEncoder) fail(err error) {
	e.first.CompareAndSwap(nil, &err)
}

// firstFailure is the first failure recorded by fail, nil if none.
func (e *colEncoder) firstFailure() error {
	if p := e.first.Load(); p != nil {
		return *p
	}
	return nil
}

// work runs column tasks until the encoder stops.
func (e *colEncoder) work() {
	var scratch deltascan.ColumnScratch
	for t := range e.tasks {
		g, c := t.g, t.c
		if e.hook != nil {
			e.hook(e, g, c)
		}
		if e.first.Load() != nil {
			g.errs[c] = errSkipped
		} else if err := writeColumn(g.rgw.ColumnWriters()[c], c, g.units, &scratch, g.stats.columns(), &g.written[c]); err != nil {
			g.errs[c] = err
			e.fail(err)
		}
		if g.left.Add(-1) == 0 {
			close(g.encoded)
		}
	}
}

// commit appends the encoded row groups to their outputs in order, and
// abandons every group after a failure.
func (e *colEncoder) commit() {
	var failed bool
	for g := range e.commits {
		<-g.encoded
		if !failed {
			g.err = g.finish(e)
			failed = g.err != nil
			if failed {
				e.fail(g.err)
			}
		} else {
			g.err = errors.New("an earlier row group failed")
		}
		g.units = nil // the sources may go
		close(g.commited)
	}
}

// finish checks the columns of an encoded group and commits it. A group
// whose columns failed fails with their errors; one whose columns were
// only skipped fails with the encoder's first failure, which is another
// group's.
func (g *groupWrite) finish(e *colEncoder) error {
	var errs []error
	skipped := -1
	for c, err := range g.errs {
		switch {
		case err == errSkipped:
			if skipped < 0 {
				skipped = c
			}
		case err != nil:
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if skipped >= 0 {
		if first := e.firstFailure(); first != nil {
			return fmt.Errorf("write %d source row groups into %s: column %d not written after another row group failed: %w", len(g.units), g.o.key, skipped, first)
		}
		return fmt.Errorf("write %d source row groups into %s: column %d: %w", len(g.units), g.o.key, skipped, errSkipped)
	}
	for c, n := range g.written {
		if n != g.want {
			return fmt.Errorf("write %d source row groups into %s: column %d got %d of %d rows", len(g.units), g.o.key, c, n, g.want)
		}
	}
	n, err := commitRowGroup(g.rgw)
	if err != nil {
		return fmt.Errorf("write row group of %s: %w", g.o.key, err)
	}
	if n != g.want {
		return fmt.Errorf("write %d source row groups into %s: wrote %d of %d rows", len(g.units), g.o.key, n, g.want)
	}
	g.o.stats.merge(g.stats)
	g.o.stats.addRecords(n)
	return nil
}

// submit queues units as the next row group of o, after waiting for the
// oldest group in flight when maxGroupsInFlight are. The units' rows count
// as written to o from now on (o.rows). Until wait, o is written by the
// encoder: the job's goroutine may only ask its size (e.size).
func (e *colEncoder) submit(o *output, units []packUnit) error {
	for len(e.pending) >= maxGroupsInFlight {
		if err := e.waitOldest(); err != nil {
			return err
		}
	}
	if e.err != nil {
		return e.err
	}
	if o.rgws == nil {
		// Made while nothing is committing into o; reused round robin
		// (a row group writer is empty again once committed).
		for range maxGroupsInFlight {
			o.rgws = append(o.rgws, o.pw.BeginRowGroup())
			o.parts = append(o.parts, o.stats.part())
		}
	}
	ncols := len(o.rgws[0].ColumnWriters())
	slot := o.groups % maxGroupsInFlight
	g := &groupWrite{
		o: o, rgw: o.rgws[slot], stats: o.parts[slot], units: units,
		order:    columnOrder(units, ncols),
		written:  make([]int64, ncols),
		errs:     make([]error, ncols),
		encoded:  make(chan struct{}),
		commited: make(chan struct{}),
	}
	o.groups++
	for _, u := range units {
		g.want += u.live
		g.bytes += u.bytes
	}
	g.left.Store(int32(ncols))
	if len(e.pending) == 0 {
		o.sized = o.pw.Size() // nothing commits into o now
		o.inFlight = 0
	}
	e.pending = append(e.pending, g)
	e.commits <- g // never blocks: at most maxGroupsInFlight are pending
	for _, c := range g.order {
		e.tasks <- colTask{g, c} // never blocks, likewise
	}
	o.rows += g.want
	o.inFlight += g.bytes
	return nil
}

// size is o's size: exact when no row group is in flight, else the size
// before the groups in flight plus their source bytes.
func (e *colEncoder) size(o *output) int64 {
	for len(e.pending) > 0 {
		select {
		case <-e.pending[0].commited:
			_ = e.waitOldest()
			continue
		default:
		}
		return o.sized + o.inFlight
	}
	return o.pw.Size()
}

// waitOldest waits for the oldest group in flight to be committed.
func (e *colEncoder) waitOldest() error {
	g := e.pending[0]
	e.pending[0] = nil
	e.pending = e.pending[1:]
	<-g.commited
	if g.err != nil && e.err == nil {
		e.err = g.err
	}
	return e.err
}

// wait waits until every submitted group is committed; the outputs are
// then the job goroutine's alone again.
func (e *colEncoder) wait() error {
	for len(e.pending) > 0 {
		_ = e.waitOldest()
	}
	return e.err
}

// stop waits for the groups in flight and ends the workers.
func (e *colEncoder) stop() error {
	err := e.wait()
	close(e.tasks)
	close(e.commits)
	e.workers.Wait()
	return err
}

// columnOrder lists the columns by decreasing uncompressed size in units,
// so that the largest start first and the workers finish together.
func columnOrder(units []packUnit, ncols int) []int {
	cost := make([]int64, ncols)
	for _, u := range units {
		s := u.p.scan
		meta := s.File().Metadata().RowGroups
		if u.rg >= len(meta) {
			continue
		}
		cols := meta[u.rg].Columns
		for c := range ncols {
			if src := s.SourceColumn(c); src >= 0 && src < len(cols) {
				cost[c] += cols[src].MetaData.TotalUncompressedSize
			}
		}
	}
	order := make([]int, ncols)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(cost[b], cost[a]) })
	return order
}
