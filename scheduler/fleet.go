package scheduler

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// The fleet queue hands out the Config.Workers slots. When more runs are due
// than slots are free, the next slot goes to the waiting table with the
// highest priority: its expected benefit per cost (Score), raised by the
// time it has waited (aging, so that no table starves). Each table has a
// quota of worker time over a sliding window (Amoro's "quota occupation":
// worker time used in the window over the quota); a table, or a group of
// tables, whose next run would take it past its quota waits while a table
// under quota waits too. The queue is work-conserving: when only tables
// over quota wait, the best of them runs anyway. A manual run (ReasonAPI:
// an operator asked for this table) goes ahead of every other waiter,
// first come first served among manual runs, and ignores quotas; a run is
// never pre-empted.

// Defaults of the fleet queue (Config.Quota, Config.QuotaWindow,
// Config.Aging).
const (
	// DefaultQuota is a table's share of worker time, in workers: 0.5 is
	// half an hour of a worker per hour (Amoro's default).
	DefaultQuota = 0.5
	// DefaultQuotaWindow is the sliding window quotas are measured over.
	DefaultQuotaWindow = time.Hour
	// DefaultAging is the wait that adds one to a waiting table's priority
	// (and doubles its score's weight).
	DefaultAging = 10 * time.Minute
)

// Weights of the benefit-per-cost score (Score), in bytes.
const (
	// FileWeight is the benefit of removing one file: the per-file cost
	// every reader pays (a request, a footer) counted as this many bytes.
	FileWeight = 1 << 20
	// RunOverhead is the cost of any run beyond the bytes it rewrites
	// (reading the log, planning, committing), so that an almost empty
	// table does not score without bound.
	RunOverhead = 8 << 20
)

// Score is the expected benefit per cost of running a table with backlog b,
// sinceLastRun after its last run: the benefit is the mergeable files
// removed (FileWeight bytes each) plus the deletion-vector deleted bytes a
// purge removes (DeletedRowsRatio × Bytes); the cost is the bytes to
// rewrite (the mergeable bytes and the files carrying the deletions,
// estimated by the deleted bytes) plus RunOverhead. The benefit grows with
// the time since the last run, up to twice after a day. A nil backlog (not
// polled yet) scores 0.
func Score(b *Backlog, sinceLastRun time.Duration) float64 {
	if b == nil {
		return 0
	}
	deleted := b.DeletedRowsRatio * float64(b.Bytes)
	benefit := float64(b.MergeableFiles)*FileWeight + deleted
	cost := float64(b.MergeableBytes) + deleted + RunOverhead
	age := min(max(sinceLastRun, 0), 24*time.Hour)
	return benefit / cost * (1 + age.Hours()/24)
}

// FleetStatus is a table's place in the fleet queue as /status shows it.
type FleetStatus struct {
	// Group is the table's quota group ("" when none).
	Group string `json:"group,omitempty"`
	// Quota is the table's share of worker time, in workers (0.5: half a
	// worker-hour per hour).
	Quota float64 `json:"quota"`
	// UsedSeconds is the worker time the table used in the quota window
	// (its running run included).
	UsedSeconds float64 `json:"used_seconds"`
	// QuotaOccupation is UsedSeconds over the quota's worker time in the
	// window; above 1 the table waits while tables under quota wait.
	QuotaOccupation float64 `json:"quota_occupation"`
	// GroupOccupation is the same for the table's group (0 when the group
	// has no quota).
	GroupOccupation float64 `json:"group_occupation,omitempty"`
	// Queued is set while the table waits for a worker.
	Queued *Queued `json:"queued,omitempty"`
}

// Queued is a waiting run.
type Queued struct {
	// Position is the run's place in the queue (1: next to run).
	Position int `json:"position"`
	// Score is the table's benefit per cost (Score) when it was queued;
	// Priority is the score with aging, the key the queue orders by.
	Score    float64 `json:"score"`
	Priority float64 `json:"priority"`
	// Since is when the run was queued.
	Since time.Time `json:"since"`
	// Manual is set for an operator's run (ReasonAPI), which goes first.
	Manual bool `json:"manual,omitempty"`
	// Why says why the run waits.
	Why string `json:"why"`
}

// span is worker time used by one run.
type span struct{ start, end time.Time }

// usage is a table's worker time in the quota window.
type usage struct {
	group   string
	spans   []span    // finished runs ending inside the window
	running time.Time // start of the running run (zero: none)
}

// waiter is one run waiting for a slot.
type waiter struct {
	name, group string
	quota       float64       // workers
	lastRun     time.Duration // duration of the table's last run (projects the next)
	score       float64
	since       time.Time
	manual      bool
	seq         uint64
	grant       chan struct{} // closed when the slot is the waiter's
	granted     bool
	started     time.Time
}

// fleet is the queue of runs waiting for a worker and the worker time each
// table used.
type fleet struct {
	workers int
	window  time.Duration
	aging   time.Duration
	groups  map[string]float64 // group quotas, in workers
	clock   Clock

	mu      sync.Mutex
	busy    int
	seq     uint64
	waiters []*waiter
	usage   map[string]*usage
}

func newFleet(workers int, window, aging time.Duration, groups map[string]float64, clock Clock) *fleet {
	return &fleet{workers: workers, window: window, aging: aging, groups: groups, clock: clock, usage: map[string]*usage{}}
}

// enqueue queues w and hands out free slots.
func (f *fleet) enqueue(w *waiter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	w.seq = f.seq
	w.since = f.clock.Now()
	w.grant = make(chan struct{})
	f.waiters = append(f.waiters, w)
	f.dispatch(w.since)
}

// abandon takes back a waiter that stopped waiting (its table stopped); a
// slot granted to it meanwhile is handed on.
func (f *fleet) abandon(w *waiter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !w.granted {
		f.remove(w)
		return
	}
	f.finish(w, f.clock.Now(), false)
}

// release returns the slot of a granted waiter whose run ended.
func (f *fleet) release(w *waiter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.finish(w, f.clock.Now(), true)
}

func (f *fleet) finish(w *waiter, now time.Time, record bool) {
	f.busy--
	if u := f.usage[w.name]; u != nil {
		if record && now.After(w.started) {
			u.spans = append(u.spans, span{w.started, now})
		}
		u.running = time.Time{}
	}
	f.dispatch(now)
}

func (f *fleet) remove(w *waiter) {
	for i, x := range f.waiters {
		if x == w {
			f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
			return
		}
	}
}

// dispatch grants free slots to the best waiters.
func (f *fleet) dispatch(now time.Time) {
	for f.busy < f.workers && len(f.waiters) > 0 {
		order := f.order(now)
		w := order[0].w
		f.remove(w)
		f.busy++
		w.granted, w.started = true, now
		u := f.usage[w.name]
		if u == nil {
			u = &usage{}
			f.usage[w.name] = u
		}
		u.group, u.running = w.group, now
		close(w.grant)
	}
}

// ranked is a waiter with what the queue knows of it now.
type ranked struct {
	w        *waiter
	priority float64
	over     string // why the waiter is over quota ("" when not)
}

// order ranks the waiters: manual runs first (oldest first), then those
// whose next run keeps them and their group within quota, then the rest;
// by priority within each, ties to the older.
func (f *fleet) order(now time.Time) []ranked {
	f.prune(now)
	group := map[string]time.Duration{}
	for _, u := range f.usage {
		if u.group != "" {
			group[u.group] += u.used(now, f.window)
		}
	}
	rs := make([]ranked, len(f.waiters))
	for i, w := range f.waiters {
		waited := now.Sub(w.since)
		age := float64(waited) / float64(f.aging)
		r := ranked{w: w, priority: w.score*(1+age) + age}
		next := min(w.lastRun, f.window)
		var used time.Duration
		if u := f.usage[w.name]; u != nil {
			used = u.used(now, f.window)
		}
		limit := time.Duration(w.quota * float64(f.window))
		if used+next > limit {
			r.over = fmt.Sprintf("over its quota: %s of worker time in the last %s, %s with its next run, quota %s (%.2g workers)",
				used.Round(time.Second), f.window, (used + next).Round(time.Second), limit.Round(time.Second), w.quota)
		} else if gq, ok := f.groups[w.group]; ok && w.group != "" {
			glimit := time.Duration(gq * float64(f.window))
			if g := group[w.group]; g+next > glimit {
				r.over = fmt.Sprintf("group %q over its quota: %s of worker time in the last %s, quota %s", w.group, g.Round(time.Second), f.window, glimit.Round(time.Second))
			}
		}
		rs[i] = r
	}
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.w.manual != b.w.manual {
			return a.w.manual
		}
		if a.w.manual {
			return a.w.seq < b.w.seq
		}
		if (a.over == "") != (b.over == "") {
			return a.over == ""
		}
		if a.priority != b.priority {
			return a.priority > b.priority
		}
		return a.w.seq < b.w.seq
	})
	return rs
}

// prune drops the spans that ended before the window and the usage of
// tables with nothing left in it.
func (f *fleet) prune(now time.Time) {
	from := now.Add(-f.window)
	for name, u := range f.usage {
		keep := u.spans[:0]
		for _, s := range u.spans {
			if s.end.After(from) {
				keep = append(keep, s)
			}
		}
		u.spans = keep
		if len(keep) == 0 && u.running.IsZero() {
			delete(f.usage, name)
		}
	}
}

// used is the worker time of u inside the window ending at now.
func (u *usage) used(now time.Time, window time.Duration) time.Duration {
	from := now.Add(-window)
	var d time.Duration
	for _, s := range u.spans {
		d += s.end.Sub(maxTime(s.start, from))
	}
	if !u.running.IsZero() {
		d += now.Sub(maxTime(u.running, from))
	}
	return max(d, 0)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// fleetView is a snapshot of the queue for Status.
type fleetView struct {
	used   map[string]time.Duration
	groups map[string]time.Duration
	queued map[string]Queued
	window time.Duration
	gquota map[string]float64
	length int
}

func (f *fleet) view() fleetView {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clock.Now()
	rs := f.order(now)
	v := fleetView{used: map[string]time.Duration{}, groups: map[string]time.Duration{}, queued: map[string]Queued{}, window: f.window, gquota: f.groups, length: len(rs)}
	for name, u := range f.usage {
		d := u.used(now, f.window)
		v.used[name] = d
		if u.group != "" {
			v.groups[u.group] += d
		}
	}
	free := f.workers - f.busy
	for i, r := range rs {
		why := fmt.Sprintf("all %d workers are busy", f.workers)
		switch {
		case i < free:
			why = "a worker is being handed to it"
		case r.over != "":
			why = r.over + "; it waits while tables under quota wait"
		case i > 0:
			why += fmt.Sprintf("; %d waiting tables go first", i)
		}
		v.queued[r.w.name] = Queued{Position: i + 1, Score: r.w.score, Priority: r.priority, Since: r.w.since, Manual: r.w.manual, Why: why}
	}
	return v
}

// of returns the FleetStatus of one table.
func (v fleetView) of(name, group string, quota float64) FleetStatus {
	fs := FleetStatus{Group: group, Quota: quota, UsedSeconds: v.used[name].Seconds()}
	if quota > 0 {
		fs.QuotaOccupation = float64(v.used[name]) / (quota * float64(v.window))
	}
	if gq, ok := v.gquota[group]; ok && group != "" && gq > 0 {
		fs.GroupOccupation = float64(v.groups[group]) / (gq * float64(v.window))
	}
	if q, ok := v.queued[name]; ok {
		fs.Queued = &q
	}
	return fs
}
