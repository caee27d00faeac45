package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/policies"
)

func TestPollNowReadsTheLogBeforeThePeriodicPollAndReturnsAfterIt(t *testing.T) {
	clock, run := newFakeClock(), &recordingRun{}
	poll := &scriptedPoll{}
	poll.set(3, Backlog{MergeableFiles: 1})
	s := newTestScheduler(t, run, poll, clock, 1)
	p := testPolicy("hinted")
	p.Triggers.SmallFiles = 10
	s.Apply([]policies.Policy{p})
	eventually(t, "first poll", func() bool { return poll.polls() == 1 && settled(s, clock) })

	poll.set(4, Backlog{MergeableFiles: 12})
	// The clock does not move: only PollNow can make the scheduler read v4.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.PollNow(ctx, "hinted"); err != nil {
		t.Fatal(err)
	}
	if st := statusOf(s, "hinted"); st.LastVersion != 4 || st.Counters.RequestedPolls != 1 {
		t.Fatalf("after PollNow: last version %d, requested polls %d; want 4, 1", st.LastVersion, st.Counters.RequestedPolls)
	}
	eventually(t, "the run the poll fired", func() bool { return run.count() == 1 })
	if got := run.call(0).Reason; got != "poll:small_files" {
		t.Fatalf("reason = %q", got)
	}

	// Hints repeated for the same commit read the log again and run nothing.
	for range 5 {
		if err := s.PollNow(ctx, "hinted"); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "idle", func() bool { return statusOf(s, "hinted").State == StateIdle })
	if run.count() != 1 {
		t.Fatalf("duplicate hints fired %d runs, want 1 in all", run.count())
	}
	if n := poll.polls(); n < 3 || n > 7 {
		t.Fatalf("polls = %d, want the first, the hinted ones (coalesced or not), no more", n)
	}
}

func TestPollNowOnAnUnknownOrHaltedTableSaysSoAtOnce(t *testing.T) {
	clock, run := newFakeClock(), &recordingRun{}
	poll := &scriptedPoll{}
	poll.set(1, Backlog{})
	s := newTestScheduler(t, run, poll, clock, 1)
	s.Apply([]policies.Policy{testPolicy("a")})
	if err := s.PollNow(context.Background(), "nope"); !errors.Is(err, ErrUnknownTable) {
		t.Fatalf("unknown table: %v", err)
	}
	eventually(t, "first poll", func() bool { return poll.polls() == 1 })
	poll.mu.Lock()
	poll.err = failure.With(failure.Halt, errors.New("not writable"))
	poll.mu.Unlock()
	clock.Advance(time.Minute)
	eventually(t, "halt", func() bool { return statusOf(s, "a").Halted })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.PollNow(ctx, "a"); !errors.Is(err, ErrHalted) {
		t.Fatalf("halted table: %v", err)
	}
}
