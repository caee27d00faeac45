package scheduler

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/policies"
)

// fakeClock is a manual clock: timers fire only when the test advances it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	clock   *fakeClock
	c       chan time.Time
	at      time.Time
	stopped bool
	fired   bool
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }
func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	was := !t.stopped && !t.fired
	t.stopped = true
	return was
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clock: c, c: make(chan time.Time, 1), at: c.now.Add(d)}
	if d <= 0 {
		t.fired = true
		t.c <- c.now
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves the clock and fires due timers.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	keep := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.stopped:
		case !t.at.After(c.now):
			t.fired = true
			t.c <- c.now
		default:
			keep = append(keep, t)
		}
	}
	c.timers = keep
}

// pending returns the number of armed timers.
func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.stopped {
			n++
		}
	}
	return n
}

// eventually waits (in real time, generously) for cond; it is a
// synchronisation helper, not a timing assertion.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, 2*time.Millisecond, what, cond)
}

// recordingRun is a RunFunc fake that records calls and replies from a
// script (the last entry repeats). block, when set, makes runs wait for a
// value (or ctx cancellation) before returning.
type recordingRun struct {
	mu      sync.Mutex
	calls   []RunRequest[policies.Policy]
	replies []reply
	block   chan struct{}
	running int
	maxRun  int
	cancels int
}

type reply struct {
	rep RunReport
	err error
}

func (r *recordingRun) run(ctx context.Context, req RunRequest[policies.Policy]) (RunReport, error) {
	r.mu.Lock()
	r.calls = append(r.calls, req)
	var rp reply
	if len(r.replies) > 0 {
		rp = r.replies[0]
		if len(r.replies) > 1 {
			r.replies = r.replies[1:]
		}
	}
	r.running++
	if r.running > r.maxRun {
		r.maxRun = r.running
	}
	block := r.block
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.running--
		r.mu.Unlock()
	}()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			r.mu.Lock()
			r.cancels++
			r.mu.Unlock()
			return RunReport{}, ctx.Err()
		}
	}
	return rp.rep, rp.err
}

func (r *recordingRun) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func (r *recordingRun) call(i int) RunRequest[policies.Policy] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[i]
}

// scriptedPoll is a PollFunc fake over a settable version and backlog.
type scriptedPoll struct {
	mu      sync.Mutex
	version int64
	backlog Backlog
	err     error
	seen    []int64
}

func (p *scriptedPoll) poll(ctx context.Context, pol policies.Policy, lastSeen int64) (PollResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, lastSeen)
	if p.err != nil {
		return PollResult{}, p.err
	}
	if p.version <= lastSeen {
		return PollResult{Version: p.version}, nil
	}
	b := p.backlog
	return PollResult{Version: p.version, Changed: true, Backlog: &b}, nil
}

func (p *scriptedPoll) set(version int64, b Backlog) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.version, p.backlog = version, b
}

func (p *scriptedPoll) polls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.seen)
}

func testPolicy(name string) policies.Policy {
	p := policies.DefaultPolicy()
	p.Name = name
	p.URL = "mem://" + name
	return p
}

// policySpec maps a policy onto the scheduler's Spec as the daemon's runner
// does; a policy named "ops" runs four operations.
func policySpec(p policies.Policy) (Spec, error) {
	sp := Spec{Name: p.Name, URL: p.URL, Strategy: string(p.Strategy), Enabled: p.Enabled, Triggers: Triggers(p.Triggers)}
	if p.Name == "ops" {
		sp.Ops = []string{"compact", "expire", "vacuum", "never"}
	}
	if p.Schedule != "" {
		sch, err := policies.ParseSchedule(p.Schedule)
		if err != nil {
			return sp, err
		}
		sp.Schedule = sch
	}
	return sp, nil
}

// samePolicy ignores where a policy was declared.
func samePolicy(a, b policies.Policy) bool {
	a.Source, b.Source = "", ""
	return reflect.DeepEqual(a, b)
}

// settled reports whether every table of s rests in the wheel (no
// goroutine works one) and dispatch sleeps on the timer of the front
// entry: the clock may be advanced.
func settled[P any](s *Scheduler[P], clock *fakeClock) bool {
	s.mu.Lock()
	ts := make([]*table[P], 0, len(s.tables))
	for _, t := range s.tables {
		ts = append(ts, t)
	}
	s.mu.Unlock()
	for _, t := range ts {
		t.mu.Lock()
		busy := t.busy
		t.mu.Unlock()
		if busy {
			return false
		}
	}
	w := s.wheel
	w.mu.Lock()
	n, armed := len(w.h), w.armed
	w.mu.Unlock()
	return len(w.kick) == 0 && (n == 0 || (armed && clock.pending() == 1))
}
