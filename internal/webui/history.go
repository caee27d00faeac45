package webui

import (
	"sync"
	"time"

	"github.com/compactord/compactord/scheduler"
)

// The web view's memory: per table, a ring buffer of backlog samples and
// one of finished runs, fed by sampling scheduler.Status (the scheduler
// keeps only the last run). Nothing of it is persisted: a restart starts
// empty, and a table's rings go when its policy goes.

const (
	backlogRingSize = 720
	runRingSize     = 50
	// backlogKeepEvery records an unchanged backlog at least this often,
	// so a flat line still has points.
	backlogKeepEvery = time.Minute
)

// backlogPoint is one sample of a table's backlog.
type backlogPoint struct {
	At         time.Time `json:"at"`
	SmallFiles int       `json:"small_files"`
	SmallBytes int64     `json:"small_bytes"`
	Files      int       `json:"files"`
}

// ring is a ring buffer of at most size elements; its buffer grows as
// elements come (a table with little history keeps little).
type ring[T any] struct {
	buf  []T
	size int
	next int
	full bool
}

func newRing[T any](n int) *ring[T] { return &ring[T]{size: n} }

func (r *ring[T]) add(v T) {
	if len(r.buf) < r.size {
		r.buf = append(r.buf, v)
		r.next = len(r.buf) % r.size
		r.full = r.next == 0
		return
	}
	r.buf[r.next] = v
	r.next = (r.next + 1) % len(r.buf)
	if r.next == 0 {
		r.full = true
	}
}

// setLast replaces the newest element (there must be one).
func (r *ring[T]) setLast(v T) {
	r.buf[(r.next-1+len(r.buf))%len(r.buf)] = v
}

// items returns the elements, oldest first.
func (r *ring[T]) items() []T {
	if !r.full {
		return append([]T(nil), r.buf[:r.next]...)
	}
	return append(append([]T(nil), r.buf[r.next:]...), r.buf[:r.next]...)
}

type tableHistory struct {
	// The rings are part of the table's entry (one allocation, not
	// three); their buffers come with their first elements.
	backlog ring[backlogPoint]
	runs    ring[scheduler.RunRecord]
	lastEnd time.Time
	last    backlogPoint
	hasLast bool
	// flat is set when the newest two backlog points have the same
	// values: an unchanged backlog then moves the newest one's time
	// instead of adding a point (the step chart draws the same line, and
	// an idle table keeps two points, not one a minute).
	flat bool
	// seen is the round (history.round) that last saw the table.
	seen uint64
}

// history holds every table's rings.
type history struct {
	mu     sync.Mutex
	tables map[string]*tableHistory
	// round counts the looks at every table: a table a look did not see
	// is forgotten at its end.
	round uint64
}

func newHistory() *history { return &history{tables: map[string]*tableHistory{}} }

// observe records what ts shows at now: a backlog point when it changed
// (or backlogKeepEvery passed) and the last run when it is new. Tables not
// in ts are forgotten.
func (h *history) observe(ts []scheduler.TableStatus, now time.Time) {
	h.observeEach(func(f func(scheduler.Sample)) {
		for _, t := range ts {
			f(scheduler.Sample{Name: t.Name, Backlog: t.Backlog, LastRun: t.LastRun})
		}
	}, now)
}

// observeEach is observe over the samples each gives: a table whose
// backlog and last run did not change costs no allocation.
func (h *history) observeEach(each func(func(scheduler.Sample)), now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.round++
	each(func(t scheduler.Sample) { h.add(t, now) })
	for name, th := range h.tables {
		if th.seen != h.round {
			delete(h.tables, name)
		}
	}
}

// add records one table's sample; h.mu is held.
func (h *history) add(t scheduler.Sample, now time.Time) {
	th := h.tables[t.Name]
	if th == nil {
		th = &tableHistory{backlog: ring[backlogPoint]{size: backlogRingSize}, runs: ring[scheduler.RunRecord]{size: runRingSize}}
		h.tables[t.Name] = th
	}
	th.seen = h.round
	if t.Backlog != nil {
		p := backlogPoint{At: now, SmallFiles: t.Backlog.SmallFiles, SmallBytes: t.Backlog.SmallBytes, Files: t.Backlog.Files}
		same := th.hasLast && th.last.SmallFiles == p.SmallFiles && th.last.SmallBytes == p.SmallBytes && th.last.Files == p.Files
		switch {
		case same && now.Sub(th.last.At) < backlogKeepEvery:
		case same && th.flat:
			th.backlog.setLast(p)
			th.last = p
		default:
			th.backlog.add(p)
			th.flat = same
			th.last, th.hasLast = p, true
		}
	}
	if t.LastRun != nil && !t.LastRun.End.Equal(th.lastEnd) {
		th.runs.add(*t.LastRun)
		th.lastEnd = t.LastRun.End
	}
}

// of returns a table's backlog samples (oldest first) and runs (newest
// first).
func (h *history) of(name string) ([]backlogPoint, []scheduler.RunRecord) {
	h.mu.Lock()
	defer h.mu.Unlock()
	th := h.tables[name]
	if th == nil {
		return nil, nil
	}
	runs := th.runs.items()
	for i, j := 0, len(runs)-1; i < j; i, j = i+1, j-1 {
		runs[i], runs[j] = runs[j], runs[i]
	}
	return th.backlog.items(), runs
}
