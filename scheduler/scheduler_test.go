package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/policies"
)

func newTestScheduler(t *testing.T, run *recordingRun, poll *scriptedPoll, clock *fakeClock, workers int) *Scheduler[policies.Policy] {
	t.Helper()
	s := New(Config[policies.Policy]{Spec: policySpec, Same: samePolicy,
		Run: run.run, Poll: poll.poll, Workers: workers, PollInterval: time.Minute,
		BackoffBase: 10 * time.Second, BackoffMax: 5 * time.Minute,
		Clock: clock, Rand: func() float64 { return 0.5 },
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if run.block != nil {
			select {
			case <-run.block:
			default:
				close(run.block)
			}
		}
		_ = s.Shutdown(ctx)
	})
	return s
}

func statusOf(s *Scheduler[policies.Policy], name string) TableStatus {
	for _, st := range s.Status() {
		if st.Name == name {
			return st
		}
	}
	return TableStatus{}
}

func TestAPollThatCrossesTheSmallFilesTriggerRunsTheTable(t *testing.T) {
	clock, run := newFakeClock(), &recordingRun{replies: []reply{{rep: RunReport{Committed: true, Version: 4, FilesRemoved: 60, FilesAdded: 1}}}}
	poll := &scriptedPoll{}
	poll.set(3, Backlog{MergeableFiles: 10})
	s := newTestScheduler(t, run, poll, clock, 1)
	p := testPolicy("events")
	s.Apply([]policies.Policy{p})

	eventually(t, "first poll", func() bool { return poll.polls() == 1 && settled(s, clock) })
	if run.count() != 0 {
		t.Fatalf("runs below threshold = %d", run.count())
	}
	poll.set(5, Backlog{MergeableFiles: 60})
	clock.Advance(time.Minute)
	eventually(t, "run", func() bool { return run.count() == 1 && statusOf(s, "events").LastRun != nil })
	if got := run.call(0).Reason; got != "poll:small_files" {
		t.Fatalf("reason = %q", got)
	}
	st := statusOf(s, "events")
	if st.LastRun.Result != ResultCommitted || st.Counters.FilesRewritten != 60 || st.LastVersion != 5 {
		t.Fatalf("status = %+v", st)
	}
	// An idle poll (no new version) passes the last seen version and does not fire again.
	eventually(t, "timer re-armed", func() bool { return settled(s, clock) })
	clock.Advance(time.Minute)
	eventually(t, "third poll", func() bool { return poll.polls() == 3 })
	if run.count() != 1 {
		t.Fatalf("an unchanged log fired another run")
	}
	if poll.seen[2] != 5 {
		t.Fatalf("third poll lastSeen = %d, want 5", poll.seen[2])
	}
}

func TestTriggersCoalesceWhileARunIsInFlight(t *testing.T) {
	clock, run := newFakeClock(), &recordingRun{block: make(chan struct{})}
	poll := &scriptedPoll{}
	s := newTestScheduler(t, run, poll, clock, 1)
	s.Apply([]policies.Policy{testPolicy("t")})
	if err := s.Trigger("t", ReasonAPI); err != nil {
		t.Fatal(err)
	}
	eventually(t, "run started", func() bool { return run.count() == 1 })
	for i := 0; i < 5; i++ {
		if err := s.Trigger("t", ReasonSignal); err != nil {
			t.Fatal(err)
		}
	}
	if got := statusOf(s, "t").Counters.Coalesced; got != 4 {
		t.Fatalf("coalesced = %d, want 4", got)
	}
	close(run.block)
	eventually(t, "follow-up run", func() bool { return run.count() == 2 })
	eventually(t, "idle", func() bool { return statusOf(s, "t").State == StateIdle && settled(s, clock) })
	if run.count() != 2 {
		t.Fatalf("runs = %d, want 2 (one in flight + one coalesced)", run.count())
	}
}

func TestTheWorkerLimitBoundsRunsAcrossTables(t *testing.T) {
	clock, run := newFakeClock(), &recordingRun{block: make(chan struct{})}
	poll := &scriptedPoll{}
	s := newTestScheduler(t, run, poll, clock, 2)
	var ps []policies.Policy
	for i := 0; i < 5; i++ {
		ps = append(ps, testPolicy(fmt.Sprintf("t%d", i)))
	}
	s.Apply(ps)
	if n := s.TriggerAll(ReasonSignal); n != 5 {
		t.Fatalf("triggered %d", n)
	}
	eventually(t, "two running, three queued", func() bool {
		queued := 0
		for _, st := range s.Status() {
			if st.State == StateQueued {
				queued++
			}
		}
		return run.count() == 2 && queued == 3
	})
	close(run.block)
	eventually(t, "all ran", func() bool { return run.count() == 5 })
	run.mu.Lock()
	maxRun := run.maxRun
	run.mu.Unlock()
	if maxRun != 2 {
		t.Fatalf("max concurrent runs = %d, want 2", maxRun)
	}
}

func TestFailuresBackOffExponentiallyWithJitter(t *testing.T) {
	if got := Backoff(1, 10*time.Second, time.Minute, func() float64 { return 0 }); got != 5*time.Second {
		t.Fatalf("n=1 rnd=0: %v", got)
	}
	if got := Backoff(3, 10*time.Second, time.Minute, func() float64 { return 0.999999 }); got < 39*time.Second || got > 40*time.Second {
		t.Fatalf("n=3 rnd~1: %v", got)
	}
	if got := Backoff(10, 10*time.Second, time.Minute, func() float64 { return 0.5 }); got != 45*time.Second {
		t.Fatalf("capped: %v", got)
	}

	clock := newFakeClock()
	run := &recordingRun{replies: []reply{{err: errors.New("throttled")}}}
	poll := &scriptedPoll{}
	s := newTestScheduler(t, run, poll, clock, 1)
	s.Apply([]policies.Policy{testPolicy("t")})
	_ = s.Trigger("t", ReasonAPI)
	eventually(t, "first failure", func() bool { return statusOf(s, "t").Failures == 1 })
	st := statusOf(s, "t")
	// base 10s, rand 0.5: 5s + 2.5s.
	if st.State != StateBackoff || st.NextRun == nil || st.NextRun.Sub(clock.Now()) != 7500*time.Millisecond {
		t.Fatalf("after 1 failure: state %s next %v (now %v)", st.State, st.NextRun, clock.Now())
	}
	// A poll/cron trigger during backoff is deferred, not run.
	clock.Advance(7 * time.Second)
	if run.count() != 1 {
		t.Fatalf("ran during backoff")
	}
	clock.Advance(500 * time.Millisecond)
	eventually(t, "second failure", func() bool { return statusOf(s, "t").Failures == 2 })
	st = statusOf(s, "t")
	if st.NextRun.Sub(clock.Now()) != 15*time.Second {
		t.Fatalf("after 2 failures: retry in %v", st.NextRun.Sub(clock.Now()))
	}
	if st.LastRun.Result != ResultRetry || st.Counters.Runs[ResultRetry] != 2 || st.LastError != "throttled" {
		t.Fatalf("status = %+v", st)
	}
	if got := run.call(1).Reason; got != ReasonRetry {
		t.Fatalf("reason = %q", got)
	}
}

func TestAHaltErrorStopsThatTableButNotTheOthers(t *testing.T) {
	clock := newFakeClock()
	poll := &scriptedPoll{}
	bad := failure.With(failure.Halt, errors.New("table requires writer feature rowTracking"))
	run := &recordingRun{}
	s := New(Config[policies.Policy]{Spec: policySpec, Same: samePolicy,
		Run: func(ctx context.Context, req RunRequest[policies.Policy]) (RunReport, error) {
			if req.Table == "bad" {
				return RunReport{}, bad
			}
			return run.run(ctx, req)
		},
		Poll: poll.poll, Clock: clock, Rand: func() float64 { return 0 },
	})
	defer s.Shutdown(context.Background())
	s.Apply([]policies.Policy{testPolicy("bad"), testPolicy("good")})
	s.TriggerAll(ReasonSignal)
	eventually(t, "halt", func() bool { return statusOf(s, "bad").Halted })
	eventually(t, "good ran", func() bool { return run.count() == 1 })
	st := statusOf(s, "bad")
	if st.State != StateHalted || st.HaltReason != bad.Error() || st.Counters.Runs[ResultHalt] != 1 || st.NextRun != nil {
		t.Fatalf("bad status = %+v", st)
	}
	if err := s.Trigger("bad", ReasonAPI); !errors.Is(err, ErrHalted) {
		t.Fatalf("trigger of halted table: %v", err)
	}
	if n := s.TriggerAll(ReasonSignal); n != 1 {
		t.Fatalf("TriggerAll counted %d tables, want 1", n)
	}
	// Changing the policy clears the halt.
	p := testPolicy("bad")
	p.Concurrency = 2
	_, _, changed := s.Apply([]policies.Policy{p, testPolicy("good")})
	if len(changed) != 1 || changed[0] != "bad" || statusOf(s, "bad").Halted {
		t.Fatalf("changed = %v halted = %v", changed, statusOf(s, "bad").Halted)
	}
}

func TestACorruptFileIsQuarantinedAndTheNextRunSkipsIt(t *testing.T) {
	clock := newFakeClock()
	run := &recordingRun{replies: []reply{
		{err: fmt.Errorf("rewrite: %w", errors.Join(errors.New("job 1: store throttled"),
			&failure.CorruptFileError{Kind: failure.DataFile, Path: "part-0007.parquet", DataFile: "part-0007.parquet", Err: errors.New("bad footer")}))},
		{rep: RunReport{Committed: true, Version: 9, FilesRemoved: 4, FilesAdded: 1}},
	}}
	s := newTestScheduler(t, run, &scriptedPoll{}, clock, 1)
	s.Apply([]policies.Policy{testPolicy("t")})
	_ = s.Trigger("t", ReasonAPI)
	eventually(t, "second run", func() bool { return run.count() == 2 && statusOf(s, "t").LastRun.Result == ResultCommitted })
	if !run.call(1).Exclude["part-0007.parquet"] || run.call(0).Exclude["part-0007.parquet"] {
		t.Fatalf("exclude lists: %v then %v", run.call(0).Exclude, run.call(1).Exclude)
	}
	st := statusOf(s, "t")
	if len(st.Quarantined) != 1 || st.Counters.Runs[ResultQuarantine] != 1 || st.Halted {
		t.Fatalf("status = %+v", st)
	}
}

func TestQuarantineWithoutANewFileBacksOffInsteadOfSpinning(t *testing.T) {
	clock := newFakeClock()
	run := &recordingRun{replies: []reply{{err: failure.With(failure.Quarantine, errors.New("bad dv somewhere"))}}}
	s := newTestScheduler(t, run, &scriptedPoll{}, clock, 1)
	s.Apply([]policies.Policy{testPolicy("t")})
	_ = s.Trigger("t", ReasonAPI)
	eventually(t, "backoff", func() bool { return statusOf(s, "t").State == StateBackoff })
	if run.count() != 1 {
		t.Fatalf("runs = %d", run.count())
	}
}

func TestReloadAddsRemovesAndChangesTables(t *testing.T) {
	clock, run := newFakeClock(), &recordingRun{block: make(chan struct{})}
	s := newTestScheduler(t, run, &scriptedPoll{}, clock, 2)
	added, _, _ := s.Apply([]policies.Policy{testPolicy("a"), testPolicy("b")})
	if fmt.Sprint(added) != "[a b]" {
		t.Fatalf("added %v", added)
	}
	_ = s.Trigger("a", ReasonAPI)
	eventually(t, "a running", func() bool { return run.count() == 1 })

	b := testPolicy("b")
	b.Strategy = policies.StrategyBinpack
	added, removed, changed := s.Apply([]policies.Policy{b, testPolicy("c")})
	if fmt.Sprint(added, removed, changed) != "[c] [a] [b]" {
		t.Fatalf("added %v removed %v changed %v", added, removed, changed)
	}
	// The removed table's in-flight run is cancelled.
	eventually(t, "a cancelled", func() bool { run.mu.Lock(); defer run.mu.Unlock(); return run.cancels == 1 })
	var names []string
	for _, st := range s.Status() {
		names = append(names, st.Name+":"+st.Strategy)
	}
	if fmt.Sprint(names) != "[b:binpack c:auto]" {
		t.Fatalf("tables = %v", names)
	}
	if err := s.Trigger("a", ReasonAPI); !errors.Is(err, ErrUnknownTable) {
		t.Fatalf("trigger removed: %v", err)
	}
	// Unchanged policies (even from another file) are left alone.
	c := testPolicy("c")
	c.Source = "elsewhere.hcl:1:1"
	_, _, changed = s.Apply([]policies.Policy{b, c})
	if len(changed) != 0 {
		t.Fatalf("changed = %v", changed)
	}
}

func TestShutdownWaitsForAnInFlightRunThenCancelsItAtTheDeadline(t *testing.T) {
	clock, run := newFakeClock(), &recordingRun{block: make(chan struct{})}
	s := New(Config[policies.Policy]{Spec: policySpec, Same: samePolicy, Run: run.run, Poll: (&scriptedPoll{}).poll, Clock: clock})
	s.Apply([]policies.Policy{testPolicy("t")})
	_ = s.Trigger("t", ReasonAPI)
	eventually(t, "running", func() bool { return run.count() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := s.Shutdown(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shutdown: %v", err)
	}
	run.mu.Lock()
	cancels := run.cancels
	run.mu.Unlock()
	if cancels != 1 {
		t.Fatalf("run was not cancelled")
	}
	if st := statusOf(s, "t"); st.LastRun == nil || st.LastRun.Result != ResultCancelled {
		t.Fatalf("last run = %+v", st.LastRun)
	}
	if err := s.Trigger("t", ReasonAPI); !errors.Is(err, ErrStopping) {
		t.Fatalf("trigger after shutdown: %v", err)
	}
}

func TestShutdownLetsARunThatFinishesInTimeCommit(t *testing.T) {
	clock, run := newFakeClock(), &recordingRun{block: make(chan struct{}), replies: []reply{{rep: RunReport{Committed: true, Version: 2}}}}
	s := New(Config[policies.Policy]{Spec: policySpec, Same: samePolicy, Run: run.run, Poll: (&scriptedPoll{}).poll, Clock: clock})
	s.Apply([]policies.Policy{testPolicy("t")})
	_ = s.Trigger("t", ReasonAPI)
	eventually(t, "running", func() bool { return run.count() == 1 })
	go func() { time.Sleep(20 * time.Millisecond); close(run.block) }()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := statusOf(s, "t"); st.LastRun.Result != ResultCommitted {
		t.Fatalf("last run = %+v", st.LastRun)
	}
}

func TestACronScheduleRunsTheTable(t *testing.T) {
	clock, run := newFakeClock(), &recordingRun{}
	poll := &scriptedPoll{}
	s := newTestScheduler(t, run, poll, clock, 1)
	p := testPolicy("t")
	p.Schedule = "@every 30s"
	s.Apply([]policies.Policy{p})
	eventually(t, "armed", func() bool { return poll.polls() == 1 && settled(s, clock) })
	if st := statusOf(s, "t"); st.NextRun == nil || st.NextRun.Sub(clock.Now()) != 30*time.Second {
		t.Fatalf("next run = %v", st.NextRun)
	}
	clock.Advance(30 * time.Second)
	eventually(t, "cron run", func() bool { return run.count() == 1 })
	if run.call(0).Reason != ReasonSchedule {
		t.Fatalf("reason %q", run.call(0).Reason)
	}
}

func TestDisabledTablesArePolledButNeverRun(t *testing.T) {
	clock, run := newFakeClock(), &recordingRun{}
	poll := &scriptedPoll{}
	poll.set(1, Backlog{MergeableFiles: 1000})
	s := newTestScheduler(t, run, poll, clock, 1)
	p := testPolicy("t")
	p.Enabled = false
	s.Apply([]policies.Policy{p})
	eventually(t, "polled", func() bool { return statusOf(s, "t").Backlog != nil })
	if err := s.Trigger("t", ReasonAPI); !errors.Is(err, ErrDisabled) {
		t.Fatalf("trigger: %v", err)
	}
	if s.TriggerAll(ReasonSignal) != 0 || run.count() != 0 || statusOf(s, "t").State != StateDisabled {
		t.Fatalf("disabled table ran or was counted")
	}
}

func TestEvaluateFiresTheFirstCrossedTrigger(t *testing.T) {
	now := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	p := testPolicy("t")
	cases := []struct {
		name    string
		b       Backlog
		lastRun time.Time
		want    string
	}{
		{"nothing", Backlog{MergeableFiles: 3}, now, ""},
		{"small files", Backlog{MergeableFiles: 50}, now, "small_files"},
		{"deleted rows", Backlog{DeletedRowsRatio: 0.06}, now, "deleted_rows_ratio"},
		{"time since last run", Backlog{MergeableFiles: 3}, now.Add(-25 * time.Hour), "max_time_since_last_run"},
		{"time since last run but nothing to do", Backlog{MergeableFiles: 1}, now.Add(-25 * time.Hour), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Evaluate(Triggers(p.Triggers), c.b, c.lastRun, now); got != c.want {
				t.Fatalf("got %q want %q", got, c.want)
			}
		})
	}
}

func TestShutdownGivesUpOnARunThatIgnoresCancellation(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{})
	s := New(Config[policies.Policy]{Spec: policySpec, Same: samePolicy,
		Run: func(ctx context.Context, req RunRequest[policies.Policy]) (RunReport, error) {
			close(started)
			<-release // ignores ctx
			return RunReport{}, nil
		},
		Poll: (&scriptedPoll{}).poll, Clock: newFakeClock(), CancelGrace: 20 * time.Millisecond,
	})
	s.Apply([]policies.Policy{testPolicy("t")})
	_ = s.Trigger("t", ReasonAPI)
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, ErrRunsStuck) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shutdown: %v", err)
	}
}

func TestAPollThatFindsAnUnwritableTableHaltsItWithoutARun(t *testing.T) {
	clock, run := newFakeClock(), &recordingRun{}
	poll := &scriptedPoll{err: failure.With(failure.Halt, errors.New("writer feature rowTracking is not supported"))}
	s := newTestScheduler(t, run, poll, clock, 1)
	s.Apply([]policies.Policy{testPolicy("t")})
	eventually(t, "halt", func() bool { return statusOf(s, "t").Halted })
	st := statusOf(s, "t")
	if st.State != StateHalted || st.Counters.PollErrors != 1 || !strings.Contains(st.HaltReason, "rowTracking") || run.count() != 0 {
		t.Fatalf("status = %+v, runs %d", st, run.count())
	}
	// A transient poll error is only reported.
	poll2 := &scriptedPoll{err: errors.New("connection reset")}
	s2 := newTestScheduler(t, &recordingRun{}, poll2, newFakeClock(), 1)
	s2.Apply([]policies.Policy{testPolicy("u")})
	eventually(t, "poll error", func() bool { return statusOf(s2, "u").PollError != "" })
	if st := statusOf(s2, "u"); st.Halted || st.PollError != "connection reset" {
		t.Fatalf("status = %+v", st)
	}
}

func TestTriggersWhileARunIsQueuedAreSatisfiedByThatRun(t *testing.T) {
	clock, run := newFakeClock(), &recordingRun{block: make(chan struct{})}
	s := newTestScheduler(t, run, &scriptedPoll{}, clock, 1)
	s.Apply([]policies.Policy{testPolicy("a"), testPolicy("b")})
	_ = s.Trigger("a", ReasonAPI)
	eventually(t, "a running", func() bool { return run.count() == 1 })
	_ = s.Trigger("b", ReasonAPI)
	eventually(t, "b queued", func() bool { return statusOf(s, "b").State == StateQueued })
	for i := 0; i < 3; i++ {
		_ = s.Trigger("b", ReasonSignal)
	}
	close(run.block)
	eventually(t, "b ran", func() bool { return run.count() == 2 && statusOf(s, "b").LastRun != nil })
	eventually(t, "idle", func() bool { return statusOf(s, "b").State == StateIdle && settled(s, clock) })
	if run.count() != 2 {
		t.Fatalf("runs = %d: triggers sent while b was queued caused another run", run.count())
	}
	if got := statusOf(s, "b").Counters.Coalesced; got != 3 {
		t.Fatalf("coalesced = %d, want 3", got)
	}
}

func TestWaitStoppedReturnsOnceARemovedTablesRunHasReturned(t *testing.T) {
	clock, run := newFakeClock(), &recordingRun{block: make(chan struct{})}
	s := newTestScheduler(t, run, &scriptedPoll{}, clock, 1)
	s.Apply([]policies.Policy{testPolicy("a")})
	_ = s.Trigger("a", ReasonAPI)
	eventually(t, "a running", func() bool { return run.count() == 1 })
	s.Apply(nil)
	if err := s.WaitStopped(context.Background()); err != nil {
		t.Fatal(err)
	}
	run.mu.Lock()
	cancels := run.cancels
	run.mu.Unlock()
	if cancels != 1 {
		t.Fatalf("WaitStopped returned before the removed table's run ended")
	}
}

// A run performs the table's operations in order and records each one; an
// operation that fails ends the run (the next ones wait for the retry), and
// the failed one carries the run's result.
func TestARunPerformsTheTablesOperationsInOrderAndStopsAtAFailure(t *testing.T) {
	clock := newFakeClock()
	run := &recordingRun{replies: []reply{
		{rep: RunReport{Committed: true, Version: 4, FilesRemoved: 6, Counts: map[string]int64{"jobs_planned": 2}}},
		{rep: RunReport{Committed: true, Version: 5, Counts: map[string]int64{"rows_expired": 12}}},
		{err: errors.New("store throttled")},
		{rep: RunReport{}},
	}}
	poll := &scriptedPoll{}
	poll.set(3, Backlog{})
	s := New(Config[policies.Policy]{Spec: policySpec, Same: samePolicy,
		Run: run.run, Poll: poll.poll, Workers: 1, PollInterval: time.Hour,
		BackoffBase: 10 * time.Second, BackoffMax: time.Minute, Clock: clock, Rand: func() float64 { return 0.5 },
	})
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	s.Apply([]policies.Policy{testPolicy("ops")})
	if err := s.Trigger("ops", ReasonAPI); err != nil {
		t.Fatal(err)
	}
	eventually(t, "run recorded", func() bool { return statusOf(s, "ops").LastRun != nil })
	if run.count() != 3 {
		t.Fatalf("operations called = %d, want 3 (the one after the failure does not run)", run.count())
	}
	for i, want := range []string{"compact", "expire", "vacuum"} {
		if got := run.call(i).Op; got != want {
			t.Errorf("call %d ran %q, want %q", i, got, want)
		}
	}
	st := statusOf(s, "ops")
	rec := st.LastRun
	var got []string
	for _, o := range rec.Ops {
		got = append(got, o.Op+"="+o.Result)
	}
	if strings.Join(got, " ") != "compact=committed expire=committed vacuum=retry" || rec.Result != ResultPartial {
		t.Fatalf("ops %v, run result %s", got, rec.Result)
	}
	if !strings.HasPrefix(rec.Error, "vacuum: ") || rec.Ops[2].Error != "store throttled" {
		t.Fatalf("run error %q, op error %q", rec.Error, rec.Ops[2].Error)
	}
	if rec.Report.Version != 5 || rec.Report.FilesRemoved != 6 || st.Counters.Counts["jobs_planned"] != 2 || st.Counters.Counts["rows_expired"] != 12 {
		t.Fatalf("run report %+v, counters %+v", rec.Report, st.Counters.Counts)
	}
}

func TestARunThatCommittedPartOfItsWorkIsPartialNotAFailure(t *testing.T) {
	clock := newFakeClock()
	run := &recordingRun{replies: []reply{
		{err: errors.New("throttled")},
		{rep: RunReport{Committed: true, Version: 7, FilesRemoved: 4}, err: errors.New("1 of 2 jobs failed to rewrite")},
	}}
	s := newTestScheduler(t, run, &scriptedPoll{}, clock, 1)
	s.Apply([]policies.Policy{testPolicy("t")})
	_ = s.Trigger("t", ReasonAPI)
	eventually(t, "first failure", func() bool { return statusOf(s, "t").Failures == 1 })
	clock.Advance(7500 * time.Millisecond)
	eventually(t, "the partial run", func() bool { return statusOf(s, "t").Counters.Runs[ResultPartial] == 1 })
	st := statusOf(s, "t")
	if st.LastRun.Result != ResultPartial || st.Counters.Runs[ResultRetry] != 1 {
		t.Fatalf("last result %s, runs %v; want partial after one retry", st.LastRun.Result, st.Counters.Runs)
	}
	// Progress resets the failure streak: the rest is retried after the
	// first backoff step (base 10s, rand 0.5: 7.5s), not the second.
	if st.Failures != 1 || st.NextRun == nil || st.NextRun.Sub(clock.Now()) != 7500*time.Millisecond {
		t.Fatalf("after a partial run: failures %d, next run in %v", st.Failures, st.NextRun.Sub(clock.Now()))
	}
}
