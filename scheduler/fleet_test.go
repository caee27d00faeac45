package scheduler

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/compactord/compactord/policies"
)

// backlogPoll is a PollFunc fake: every table is at version 1 with the
// backlog given by its name (the default backlog for names not listed).
type backlogPoll struct {
	byName map[string]Backlog
	def    Backlog
}

func (p *backlogPoll) poll(ctx context.Context, pol policies.Policy, lastSeen int64) (PollResult, error) {
	if lastSeen >= 1 {
		return PollResult{Version: 1}, nil
	}
	b, ok := p.byName[pol.Name]
	if !ok {
		b = p.def
	}
	return PollResult{Version: 1, Changed: true, Backlog: &b}, nil
}

// gatedRun is a RunFunc fake that announces each run on started and
// returns when the test sends on release.
type gatedRun struct {
	started chan string
	release chan struct{}
}

func (g *gatedRun) run(ctx context.Context, req RunRequest[policies.Policy]) (RunReport, error) {
	g.started <- req.Table
	select {
	case <-g.release:
	case <-ctx.Done():
		return RunReport{}, ctx.Err()
	}
	return RunReport{}, nil
}

func newFleetScheduler(t *testing.T, run RunFunc[policies.Policy], poll PollFunc[policies.Policy], clock *fakeClock, workers int, aging time.Duration) *Scheduler[policies.Policy] {
	t.Helper()
	s := New(Config[policies.Policy]{Spec: policySpec, Same: samePolicy,
		Run: run, Poll: poll, Workers: workers, PollInterval: 24 * time.Hour, Aging: aging,
		Clock: clock, Rand: func() float64 { return 0.5 },
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s
}

func (f *fleet) waiting() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

func TestTheNextWorkerGoesToTheWaitingTableWithTheHighestBenefitPerCost(t *testing.T) {
	clock := newFakeClock()
	run := &gatedRun{started: make(chan string), release: make(chan struct{})}
	// Below the small-files trigger: the tables run only when signalled.
	poll := &backlogPoll{byName: map[string]Backlog{
		"blocker": {},
		"low":     {MergeableFiles: 10, MergeableBytes: 10 << 20},
		"mid":     {MergeableFiles: 20, MergeableBytes: 10 << 20},
		"high":    {MergeableFiles: 40, MergeableBytes: 4 << 20},
	}}
	s := newFleetScheduler(t, run.run, poll.poll, clock, 1, 0)
	s.Apply([]policies.Policy{testPolicy("blocker"), testPolicy("low"), testPolicy("mid"), testPolicy("high")})
	eventually(t, "first polls", func() bool { return settled(s, clock) })
	if err := s.Trigger("blocker", ReasonSignal); err != nil {
		t.Fatal(err)
	}
	if got := <-run.started; got != "blocker" {
		t.Fatalf("first run = %s", got)
	}
	// Queued in the worst order: arrival order would run low first.
	for i, name := range []string{"low", "mid", "high"} {
		if err := s.Trigger(name, ReasonSignal); err != nil {
			t.Fatal(err)
		}
		eventually(t, name+" queued", func() bool { return s.fleet.waiting() == i+1 })
	}
	q := statusOf(s, "high").Fleet.Queued
	if q == nil || q.Position != 1 || !strings.Contains(q.Why, "all 1 workers are busy") {
		t.Fatalf("high's queue entry = %+v", q)
	}
	if lq := statusOf(s, "low").Fleet.Queued; lq == nil || lq.Position != 3 || lq.Score >= q.Score {
		t.Fatalf("low's queue entry = %+v (high's %+v)", lq, q)
	}
	var order []string
	for range 3 {
		run.release <- struct{}{}
		order = append(order, <-run.started)
	}
	run.release <- struct{}{}
	if got := strings.Join(order, ","); got != "high,mid,low" {
		t.Fatalf("run order = %s, want high,mid,low", got)
	}
}

func TestAManualRunGoesAheadOfTheQueue(t *testing.T) {
	clock := newFakeClock()
	run := &gatedRun{started: make(chan string), release: make(chan struct{})}
	poll := &backlogPoll{byName: map[string]Backlog{
		"blocker": {},
		"low":     {MergeableFiles: 10, MergeableBytes: 10 << 20},
		"high":    {MergeableFiles: 40, MergeableBytes: 4 << 20},
	}}
	s := newFleetScheduler(t, run.run, poll.poll, clock, 1, 0)
	s.Apply([]policies.Policy{testPolicy("blocker"), testPolicy("low"), testPolicy("high")})
	eventually(t, "first polls", func() bool { return settled(s, clock) })
	if err := s.Trigger("blocker", ReasonSignal); err != nil {
		t.Fatal(err)
	}
	<-run.started
	if err := s.Trigger("high", ReasonSignal); err != nil {
		t.Fatal(err)
	}
	eventually(t, "high queued", func() bool { return s.fleet.waiting() == 1 })
	if err := s.Trigger("low", ReasonAPI); err != nil {
		t.Fatal(err)
	}
	eventually(t, "low queued", func() bool { return s.fleet.waiting() == 2 })
	if q := statusOf(s, "low").Fleet.Queued; q == nil || !q.Manual || q.Position != 1 {
		t.Fatalf("low's queue entry = %+v", q)
	}
	run.release <- struct{}{}
	if got := <-run.started; got != "low" {
		t.Fatalf("after the blocker ran %s, want the manual run of low", got)
	}
	run.release <- struct{}{}
	if got := <-run.started; got != "high" {
		t.Fatalf("then %s, want high", got)
	}
	run.release <- struct{}{}
}

// clockRun is a RunFunc fake whose runs last a fixed time on the fake
// clock: each run arms a timer and returns when the test advances the
// clock past it. It records every run's span.
type clockRun struct {
	clock *fakeClock
	dur   func(table string) time.Duration
	// onStart is called as each run starts (before its timer is armed).
	onStart func(table string)

	mu       sync.Mutex
	inflight map[string]time.Time // table -> end of its run
	spans    map[string][]span
}

func (c *clockRun) run(ctx context.Context, req RunRequest[policies.Policy]) (RunReport, error) {
	if c.onStart != nil {
		c.onStart(req.Table)
	}
	start := c.clock.Now()
	d := c.dur(req.Table)
	timer := c.clock.NewTimer(d)
	c.mu.Lock()
	c.inflight[req.Table] = start.Add(d)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.inflight, req.Table)
		c.spans[req.Table] = append(c.spans[req.Table], span{start, c.clock.Now()})
		c.mu.Unlock()
	}()
	select {
	case <-timer.C():
		return RunReport{Committed: true, Version: 1}, nil
	case <-ctx.Done():
		return RunReport{}, ctx.Err()
	}
}

// next returns how many runs are in flight and the earliest end.
func (c *clockRun) next() (int, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var end time.Time
	for _, e := range c.inflight {
		if end.IsZero() || e.Before(end) {
			end = e
		}
	}
	return len(c.inflight), end
}

func (c *clockRun) ran(table string) []span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]span(nil), c.spans[table]...)
}

// usedIn is the worker time of spans inside [from, to].
func usedIn(spans []span, from, to time.Time) time.Duration {
	var d time.Duration
	for _, s := range spans {
		a, b := maxTime(s.start, from), s.end
		if b.After(to) {
			b = to
		}
		if b.After(a) {
			d += b.Sub(a)
		}
	}
	return d
}

func TestOneHugeTableGetsItsQuotaWhileTwoHundredSmallOnesWaitAndEveryWorkerWhenAlone(t *testing.T) {
	const (
		workers = 2
		small   = 200
		bigRun  = 10 * time.Minute
		runTime = 20 * time.Second
	)
	clock := newFakeClock()
	t0 := clock.Now()
	// Every table crosses the small-files trigger at its first poll; the
	// big one has 100 times the backlog of each small one.
	poll := &backlogPoll{
		def:    Backlog{MergeableFiles: 60, MergeableBytes: 6 << 20, Files: 60, Bytes: 6 << 20},
		byName: map[string]Backlog{"big": {MergeableFiles: 6000, MergeableBytes: 600 << 20, Files: 6000, Bytes: 600 << 20}},
	}
	var s *Scheduler[policies.Policy]
	run := &clockRun{clock: clock, inflight: map[string]time.Time{}, spans: map[string][]span{},
		dur: func(table string) time.Duration {
			if table == "big" {
				return bigRun
			}
			return runTime
		},
		// The big table is written to all the time: each of its runs
		// leaves another one due.
		onStart: func(table string) {
			if table == "big" {
				_ = s.Trigger("big", ReasonSignal)
			}
		},
	}
	// Slow aging: the big table's higher score would win every free
	// worker but for its quota.
	s = newFleetScheduler(t, run.run, poll.poll, clock, workers, time.Hour)
	ps := []policies.Policy{testPolicy("big")}
	for i := range small {
		ps = append(ps, testPolicy(fmt.Sprintf("small%03d", i)))
	}
	s.Apply(ps)
	eventually(t, "every table due", func() bool {
		n, _ := run.next()
		return n == workers && s.fleet.waiting() == small+1-workers
	})

	// settle waits until every worker's run has armed its timer and the
	// big table is queued again (or running), then returns the earliest end.
	settle := func() time.Time {
		var end time.Time
		eventually(t, "runs settled", func() bool {
			s.fleet.mu.Lock()
			busy, waiting := s.fleet.busy, len(s.fleet.waiters)
			bigQueued := false
			for _, w := range s.fleet.waiters {
				bigQueued = bigQueued || w.name == "big"
			}
			s.fleet.mu.Unlock()
			n, e := run.next()
			run.mu.Lock()
			_, bigRunning := run.inflight["big"]
			run.mu.Unlock()
			end = e
			return n == busy && (busy == workers || waiting == 0) && (bigQueued || bigRunning)
		})
		return end
	}
	smallsDone := func() bool {
		for i := range small {
			if len(run.ran(fmt.Sprintf("small%03d", i))) == 0 {
				return false
			}
		}
		return true
	}
	sawOverQuota := false
	for !smallsDone() {
		end := settle()
		if !sawOverQuota {
			if st := statusOf(s, "big"); st.Fleet.Queued != nil && strings.Contains(st.Fleet.Queued.Why, "over its quota") {
				sawOverQuota = true
				if st.Fleet.QuotaOccupation < 0.6 || st.Fleet.Quota != DefaultQuota {
					t.Fatalf("big waits over quota with %+v", st.Fleet)
				}
			}
		}
		clock.Advance(end.Sub(clock.Now()))
		if clock.Now().Sub(t0) > 3*time.Hour {
			t.Fatal("the small tables did not all run in three hours")
		}
	}
	phase1 := clock.Now()
	// Every small table ran within its quota window.
	var lastSmall time.Time
	for i := range small {
		sp := run.ran(fmt.Sprintf("small%03d", i))
		if got := sp[0].start.Sub(t0); got > DefaultQuotaWindow {
			t.Fatalf("small%03d waited %s for its run", i, got)
		}
		lastSmall = maxTime(lastSmall, sp[0].start)
	}
	// While small tables waited, the big one had at most its quota of any
	// hour.
	big := run.ran("big")
	limit := time.Duration(DefaultQuota * float64(DefaultQuotaWindow))
	for _, sp := range big {
		if sp.start.After(lastSmall) {
			break
		}
		if got := usedIn(big, sp.start.Add(-DefaultQuotaWindow), sp.end); got > limit {
			t.Fatalf("the big table used %s of the hour to %s while small tables waited; quota %s", got, sp.end.Sub(t0), limit)
		}
	}
	if !sawOverQuota {
		t.Fatal("the big table never waited over its quota")
	}
	// Alone, the big table runs back to back past its quota.
	for clock.Now().Sub(phase1) < 2*time.Hour {
		end := settle()
		clock.Advance(end.Sub(clock.Now()))
	}
	now := clock.Now()
	if got := usedIn(run.ran("big"), now.Add(-DefaultQuotaWindow), now); got < DefaultQuotaWindow-bigRun {
		t.Fatalf("alone, the big table used %s of the last hour; want back-to-back runs", got)
	}
	t.Logf("small tables done after %s (last started at %s); big ran %d times", phase1.Sub(t0), lastSmall.Sub(t0), len(run.ran("big")))
}

func TestAGroupOverItsQuotaWaitsWhileATableOutsideItWaits(t *testing.T) {
	clock := newFakeClock()
	f := newFleet(1, time.Hour, DefaultAging, map[string]float64{"etl": 0.25}, clock)
	granted := func(w *waiter) bool {
		select {
		case <-w.grant:
			return true
		default:
			return false
		}
	}
	// a, of group etl, uses the group's 15 minutes.
	a := &waiter{name: "a", group: "etl", quota: 1, score: 1}
	f.enqueue(a)
	clock.Advance(15 * time.Minute)
	blocker := &waiter{name: "x", quota: 1}
	f.enqueue(blocker)
	f.release(a)
	if !granted(blocker) {
		t.Fatal("the free worker was not handed on")
	}
	// b (etl, far better score) and c wait for the one worker.
	b := &waiter{name: "b", group: "etl", quota: 1, score: 100, lastRun: time.Minute}
	c := &waiter{name: "c", quota: 1, score: 1, lastRun: time.Minute}
	f.enqueue(b)
	f.enqueue(c)
	v := f.view()
	if q := v.queued["b"]; q.Position != 2 || !strings.Contains(q.Why, `group "etl" over its quota`) {
		t.Fatalf("b's queue entry = %+v", q)
	}
	if fs := v.of("a", "etl", 1); fs.GroupOccupation != 1 {
		t.Fatalf("etl's occupation = %v, want 1", fs.GroupOccupation)
	}
	f.release(blocker)
	if !granted(c) || granted(b) {
		t.Fatalf("granted c=%v b=%v: want c, the table outside the group over quota", granted(c), granted(b))
	}
	// With nothing else waiting, the group runs past its quota.
	f.release(c)
	if !granted(b) {
		t.Fatal("b alone did not get the free worker")
	}
}
