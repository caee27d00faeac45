package scheduler

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/compactord/compactord/policies"
)

func TestUnpolledCountsTheTablesWhoseFirstPollIsStillToCome(t *testing.T) {
	clock := newFakeClock()
	gate := make(chan struct{})
	poll := &scriptedPoll{}
	poll.set(1, Backlog{Files: 3})
	s := New(Config[policies.Policy]{Spec: func(p policies.Policy) (Spec, error) {
		if p.Name == "badspec" {
			return Spec{Name: p.Name}, errors.New("bad schedule")
		}
		return policySpec(p)
	}, Same: samePolicy, Run: (&recordingRun{}).run, Clock: clock, Rand: func() float64 { return 0 },
		Poll: func(ctx context.Context, p policies.Policy, lastSeen int64) (PollResult, error) {
			if p.Name == "slow" {
				if err := waitGate(ctx, gate); err != nil {
					return PollResult{}, err
				}
			}
			if p.Name == "broken" {
				return PollResult{}, errors.New("read failed")
			}
			return poll.poll(ctx, p, lastSeen)
		}})
	defer s.Shutdown(context.Background())
	// A table halted by its policy never polls: it is not waited for.
	s.Apply([]policies.Policy{testPolicy("a"), testPolicy("slow"), testPolicy("broken"), testPolicy("badspec")})
	eventually(t, "the quick first polls", func() bool { return s.Unpolled() == 1 })
	close(gate)
	eventually(t, "every first poll", func() bool { return s.Unpolled() == 0 })
	// A reload that adds a table counts it until it polled; one removed
	// before its first poll is not waited for.
	s.Apply([]policies.Policy{testPolicy("a"), testPolicy("slow"), testPolicy("broken"), testPolicy("badspec"), testPolicy("new")})
	eventually(t, "the added table's first poll", func() bool { return s.Unpolled() == 0 })
	if n := statusOf(s, "new").Counters.Polls; n != 1 {
		t.Fatalf("the added table polled %d times, want 1", n)
	}
	s.Apply(nil)
	wantUnpolled(t, s, 0, "with no tables")
}

func TestATableRemovedBeforeItsFirstPollIsNotWaitedFor(t *testing.T) {
	clock := newFakeClock()
	gate := make(chan struct{})
	defer close(gate)
	s := New(Config[policies.Policy]{Spec: policySpec, Same: samePolicy, Run: (&recordingRun{}).run, Clock: clock,
		Rand: func() float64 { return 0 }, PollConcurrency: 1,
		Poll: func(ctx context.Context, p policies.Policy, lastSeen int64) (PollResult, error) {
			// The one poll worker is held by the first table polled.
			return PollResult{}, waitGate(ctx, gate)
		}})
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	}()
	s.Apply([]policies.Policy{testPolicy("a"), testPolicy("b")})
	wantUnpolled(t, s, 2, "after adding two tables")
	s.Apply(nil)
	wantUnpolled(t, s, 0, "after removing both before their first poll")
}

func TestSamplesHandOutEveryTablesBacklogAndLastRunAsStatusShowsThem(t *testing.T) {
	clock := newFakeClock()
	poll := &scriptedPoll{}
	poll.set(4, Backlog{SmallFiles: 60, Files: 70, MergeableFiles: 60})
	run := &recordingRun{replies: []reply{{rep: RunReport{Committed: true, Version: 5}}}}
	s := New(Config[policies.Policy]{Spec: policySpec, Same: samePolicy, Run: run.run, Poll: poll.poll,
		Clock: clock, Rand: func() float64 { return 0 }})
	defer s.Shutdown(context.Background())
	s.Apply([]policies.Policy{testPolicy("a"), testPolicy("b")})
	eventually(t, "both tables ran", func() bool {
		return statusOf(s, "a").LastRun != nil && statusOf(s, "b").LastRun != nil
	})
	got := map[string]Sample{}
	s.Samples(func(sm Sample) { got[sm.Name] = sm })
	if len(got) != 2 {
		t.Fatalf("samples of %d tables, want 2", len(got))
	}
	for _, name := range []string{"a", "b"} {
		st, sm := statusOf(s, name), got[name]
		if sm.Backlog == nil || !reflect.DeepEqual(*sm.Backlog, *st.Backlog) {
			t.Errorf("%s: sample backlog %+v, status %+v", name, sm.Backlog, st.Backlog)
		}
		if sm.LastRun == nil || !sm.LastRun.End.Equal(st.LastRun.End) || sm.LastRun.Result != st.LastRun.Result {
			t.Errorf("%s: sample last run %+v, status %+v", name, sm.LastRun, st.LastRun)
		}
	}
}

// waitGate waits until gate is closed (nil) or ctx ends (its error).
func waitGate(ctx context.Context, gate <-chan struct{}) error {
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func wantUnpolled(t *testing.T, s *Scheduler[policies.Policy], want int, when string) {
	t.Helper()
	if n := s.Unpolled(); n != want {
		t.Fatalf("Unpolled = %d %s, want %d", n, when, want)
	}
}
