package scheduler

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/policies"
)

// memHalts is a HaltStore over a map, shared by the schedulers of a test
// as replicas share a table's store.
type memHalts struct {
	mu    sync.Mutex
	halts map[string]Halt
	loads int
	saves int
}

func (m *memHalts) Load(ctx context.Context, p policies.Policy) (*Halt, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.loads++
	h, ok := m.halts[p.Name]
	if !ok {
		return nil, nil
	}
	return &h, nil
}

func (m *memHalts) Save(ctx context.Context, p policies.Policy, h *Halt) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.saves++
	if h == nil {
		delete(m.halts, p.Name)
	} else {
		m.halts[p.Name] = *h
	}
	return nil
}

func (m *memHalts) get(name string) (Halt, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.halts[name]
	return h, ok
}

func (p *scriptedPoll) setErr(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.err = err
}

func TestATableThatCannotBeReadWaitsWithBackoffAndRunsOnceItCan(t *testing.T) {
	clock, run := newFakeClock(), &recordingRun{replies: []reply{{rep: RunReport{Committed: true, Version: 2}}}}
	poll := &scriptedPoll{}
	missing := Unavailable(errors.New("table t: open file:///x: stat /x: no such file or directory"))
	poll.setErr(missing)
	s := newTestScheduler(t, run, poll, clock, 1)
	s.Apply([]policies.Policy{testPolicy("t")})
	eventually(t, "waiting", func() bool { return statusOf(s, "t").State == StateWaiting })
	st := statusOf(s, "t")
	start := clock.Now()
	// Backoff(1, 10s, 5m, 0.5) = 7.5s; Backoff(2) = 15s.
	if st.Halted || st.Waiting == nil || st.Waiting.Reason != missing.Error() || st.Waiting.Attempts != 1 ||
		!st.Waiting.NextAttempt.Equal(start.Add(7500*time.Millisecond)) || !st.NextPoll.Equal(st.Waiting.NextAttempt) {
		t.Fatalf("status %+v (waiting %+v): want waiting, not halted, next attempt in 7.5s", st, st.Waiting)
	}
	clock.Advance(7500 * time.Millisecond)
	eventually(t, "second attempt", func() bool { w := statusOf(s, "t").Waiting; return w != nil && w.Attempts == 2 })
	if w := statusOf(s, "t").Waiting; !w.NextAttempt.Equal(start.Add(7500*time.Millisecond+15*time.Second)) || !w.Since.Equal(start) {
		t.Fatalf("after the second attempt: %+v, want the next in 15s", w)
	}

	// The table appears: the next poll reads it and its trigger runs it.
	poll.setErr(nil)
	poll.set(1, Backlog{MergeableFiles: 60})
	clock.Advance(15 * time.Second)
	eventually(t, "a poll-triggered run", func() bool {
		return statusOf(s, "t").LastRun != nil && statusOf(s, "t").LastRun.Result == ResultCommitted
	})
	st = statusOf(s, "t")
	if st.Waiting != nil || st.Halted || st.State != StateIdle {
		t.Fatalf("after the table appeared: %+v", st)
	}
}

func TestARunThatFindsTheTableUnavailableWaitsInsteadOfHalting(t *testing.T) {
	clock := newFakeClock()
	run := &recordingRun{replies: []reply{{err: Unavailable(errors.New("table t: cannot read _delta_log/: permission denied"))}}}
	s := newTestScheduler(t, run, &scriptedPoll{}, clock, 1)
	s.Apply([]policies.Policy{testPolicy("t")})
	_ = s.Trigger("t", ReasonAPI)
	eventually(t, "waiting", func() bool { return statusOf(s, "t").State == StateWaiting })
	st := statusOf(s, "t")
	if st.Halted || st.Waiting == nil || !strings.Contains(st.Waiting.Reason, "permission denied") || st.Counters.Runs[ResultHalt] != 0 {
		t.Fatalf("status %+v", st)
	}
}

func TestAReloadReChecksAHaltedTableWhosePolicyDidNotChange(t *testing.T) {
	clock := newFakeClock()
	poll := &scriptedPoll{}
	poll.setErr(failure.With(failure.Halt, errors.New("table t: cannot be compacted by this build")))
	s := newTestScheduler(t, &recordingRun{}, poll, clock, 1)
	ps := []policies.Policy{testPolicy("t")}
	s.Apply(ps)
	eventually(t, "halt", func() bool { return statusOf(s, "t").Halted })
	if st := statusOf(s, "t"); !strings.Contains(st.HaltAdvice, "POST /tables/t/resume") || st.HaltedSince == nil {
		t.Fatalf("status %+v: no advice or time", st)
	}

	// The cause is fixed; the same policies are applied again (a reload).
	poll.setErr(nil)
	poll.set(4, Backlog{})
	_, _, changed := s.Apply(ps)
	if len(changed) != 0 {
		t.Fatalf("changed %v", changed)
	}
	eventually(t, "the re-check's poll", func() bool { st := statusOf(s, "t"); return !st.Halted && st.LastVersion == 4 })
	if st := statusOf(s, "t"); st.State != StateIdle || st.HaltReason != "" {
		t.Fatalf("after the reload: %+v", st)
	}
}

func TestResumeClearsAHaltAndAHaltThatRecursHaltsAgain(t *testing.T) {
	clock := newFakeClock()
	poll := &scriptedPoll{}
	bad := failure.With(failure.Halt, errors.New("table t: cannot be compacted by this build"))
	poll.setErr(bad)
	s := newTestScheduler(t, &recordingRun{}, poll, clock, 1)
	s.Apply([]policies.Policy{testPolicy("t")})
	eventually(t, "halt", func() bool { return statusOf(s, "t").Halted })
	polls := poll.polls()

	if err := s.Resume("t"); err != nil {
		t.Fatal(err)
	}
	// The cause is still there: the poll at once halts it again.
	eventually(t, "halted again", func() bool { return poll.polls() > polls && statusOf(s, "t").Halted })
	poll.setErr(nil)
	poll.set(2, Backlog{})
	if err := s.Resume("t"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "resumed", func() bool { st := statusOf(s, "t"); return !st.Halted && st.LastVersion == 2 })
	if err := s.Resume("t"); !errors.Is(err, ErrNotHalted) {
		t.Fatalf("Resume of a running table: %v", err)
	}
	if err := s.Resume("nope"); !errors.Is(err, ErrUnknownTable) {
		t.Fatalf("Resume of an unknown table: %v", err)
	}
}

func TestAnInvalidPolicyIsNotResumedButAReloadOfAFixedOneIs(t *testing.T) {
	clock := newFakeClock()
	s := newTestScheduler(t, &recordingRun{}, &scriptedPoll{}, clock, 1)
	p := testPolicy("t")
	p.Schedule = "not a cron line"
	s.Apply([]policies.Policy{p})
	if err := s.Resume("t"); !errors.Is(err, ErrPolicyInvalid) || !statusOf(s, "t").Halted {
		t.Fatalf("Resume of an invalid policy: %v", err)
	}
	s.Apply([]policies.Policy{p}) // a reload of the same invalid policy
	if !statusOf(s, "t").Halted {
		t.Fatal("a reload cleared the halt of an invalid policy")
	}
}

func TestAStoredHaltSurvivesARestartUntilResumedAndReachesEveryReplica(t *testing.T) {
	store := &memHalts{halts: map[string]Halt{}}
	bad := failure.With(failure.Halt, errors.New("table t: cannot be compacted by this build"))
	newReplica := func(clock *fakeClock, poll *scriptedPoll, run *recordingRun) *Scheduler[policies.Policy] {
		s := New(Config[policies.Policy]{Spec: policySpec, Same: samePolicy,
			Run: run.run, Poll: poll.poll, Workers: 1, PollInterval: time.Minute,
			BackoffBase: 10 * time.Second, BackoffMax: 5 * time.Minute,
			Clock: clock, Rand: func() float64 { return 0.5 }, Halts: store,
		})
		t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
		return s
	}
	ps := []policies.Policy{testPolicy("t")}

	// The first daemon halts the table; the halt is stored.
	clockA, pollA := newFakeClock(), &scriptedPoll{}
	pollA.setErr(bad)
	a := newReplica(clockA, pollA, &recordingRun{})
	a.Apply(ps)
	eventually(t, "stored halt", func() bool { h, ok := store.get("t"); return ok && h.Reason == bad.Error() })
	_ = a.Shutdown(context.Background())

	// A restarted daemon (and any other replica) starts the table halted,
	// with the stored reason, before any poll.
	clockB, pollB, runB := newFakeClock(), &scriptedPoll{}, &recordingRun{}
	pollB.set(3, Backlog{MergeableFiles: 60})
	b := newReplica(clockB, pollB, runB)
	b.Apply(ps)
	eventually(t, "halted from the store", func() bool { return statusOf(b, "t").Halted })
	if st := statusOf(b, "t"); st.HaltReason != bad.Error() || pollB.polls() != 0 || runB.count() != 0 {
		t.Fatalf("restarted: %+v, %d polls, %d runs", st, pollB.polls(), runB.count())
	}

	// A third replica was running the table when b halted it again: its
	// next run reads the stored halt and does not run.
	clockC, pollC, runC := newFakeClock(), &scriptedPoll{}, &recordingRun{}
	c := newReplica(clockC, pollC, runC)
	store.Save(context.Background(), testPolicy("t"), nil)
	c.Apply(ps)
	eventually(t, "c polled", func() bool { return pollC.polls() == 1 })
	store.Save(context.Background(), testPolicy("t"), &Halt{Reason: "halted by b", Since: clockB.Now()})
	_ = c.Trigger("t", ReasonAPI)
	eventually(t, "c halted", func() bool { return statusOf(c, "t").Halted })
	if runC.count() != 0 || statusOf(c, "t").HaltReason != "halted by b" {
		t.Fatalf("c ran %d times (status %+v)", runC.count(), statusOf(c, "t"))
	}

	// b is resumed: the store is cleared, b runs, and c, halted from the
	// store, sees it cleared at its next check.
	if err := b.Resume("t"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "store cleared", func() bool { _, ok := store.get("t"); return !ok })
	eventually(t, "b runs", func() bool { return runB.count() == 1 })
	clockC.Advance(time.Minute)
	eventually(t, "c resumed", func() bool { return !statusOf(c, "t").Halted })
}

func TestAReloadClearsTheStoredHaltOfATableItStarts(t *testing.T) {
	store := &memHalts{halts: map[string]Halt{"t": {Reason: "old", Since: time.Now()}}}
	clock, poll := newFakeClock(), &scriptedPoll{}
	s := New(Config[policies.Policy]{Spec: policySpec, Same: samePolicy,
		Run: (&recordingRun{}).run, Poll: poll.poll, Clock: clock, Halts: store})
	defer s.Shutdown(context.Background())
	s.Apply(nil) // the daemon starts without the table
	p := testPolicy("t")
	s.Apply([]policies.Policy{p}) // a reload adds it
	eventually(t, "store cleared", func() bool { _, ok := store.get("t"); return !ok })
	if statusOf(s, "t").Halted {
		t.Fatal("a table a reload started adopted the stored halt")
	}
}
