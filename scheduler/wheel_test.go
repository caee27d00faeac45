package scheduler

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/compactord/compactord/policies"
)

func TestTheWheelHandsOutTablesByDueTimeAndUrgentOnesFirst(t *testing.T) {
	w := newWheel[policies.Policy]()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tables := map[string]*table[policies.Policy]{}
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		tables[name] = &table[policies.Policy]{hidx: -1, spec: Spec{Name: name}}
	}
	w.push(tables["c"], at.Add(3*time.Minute), false)
	w.push(tables["a"], at.Add(1*time.Minute), false)
	w.push(tables["d"], at.Add(3*time.Minute), false) // same time as c: after it
	w.push(tables["b"], at.Add(2*time.Minute), false)
	w.push(tables["e"], at.Add(9*time.Minute), false)
	// A later push never delays a table; an earlier one moves it forward.
	w.push(tables["a"], at.Add(8*time.Minute), false)
	w.push(tables["e"], at.Add(30*time.Second), false)

	if got, wait := w.next(at); got != nil || wait != 30*time.Second {
		t.Fatalf("before anything is due: %v, wait %s; want nothing for 30s", got, wait)
	}
	// PollNow's push: urgent, before every table merely due.
	w.push(tables["d"], at, true)
	var order []string
	for {
		got, _ := w.next(at.Add(time.Hour))
		if got == nil {
			break
		}
		order = append(order, got.spec.Name)
		if got.hidx != -1 || got.urgent {
			t.Fatalf("%s popped with heap index %d, urgent %v", got.spec.Name, got.hidx, got.urgent)
		}
	}
	if got := fmt.Sprint(order); got != "[d e a b c]" {
		t.Fatalf("order = %s, want [d e a b c]", got)
	}
	if got, wait := w.next(at); got != nil || wait >= 0 {
		t.Fatalf("empty wheel: %v, wait %s", got, wait)
	}
	// remove takes a table out wherever it stands.
	w.push(tables["a"], at, false)
	w.push(tables["b"], at.Add(time.Second), false)
	w.remove(tables["a"])
	if got, _ := w.next(at.Add(time.Hour)); got != tables["b"] {
		t.Fatalf("after removing a: %v, want b", got)
	}
}

// orderedPoll is a PollFunc fake that records the order tables are polled
// in and holds each poll until released.
type orderedPoll struct {
	release chan struct{}

	mu       sync.Mutex
	order    []string
	inflight int
	most     int
}

func (o *orderedPoll) poll(ctx context.Context, p policies.Policy, lastSeen int64) (PollResult, error) {
	o.mu.Lock()
	o.order = append(o.order, p.Name)
	o.inflight++
	o.most = max(o.most, o.inflight)
	o.mu.Unlock()
	select {
	case <-o.release:
	case <-ctx.Done():
	}
	o.mu.Lock()
	o.inflight--
	o.mu.Unlock()
	return PollResult{Version: 1, Changed: lastSeen < 1, Backlog: &Backlog{}}, nil
}

func (o *orderedPoll) polled() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.order...)
}

// A change event's poll (PollNow) goes ahead of the periodic polls already
// due, and counts in PollConcurrency like them.
func TestPollNowGoesAheadOfDuePollsWithinThePollBound(t *testing.T) {
	poll := &orderedPoll{release: make(chan struct{})}
	s := New(Config[policies.Policy]{Spec: policySpec, Same: samePolicy, Run: (&recordingRun{}).run, Poll: poll.poll,
		Workers: 1, PollInterval: time.Hour, PollConcurrency: 1, Clock: newFakeClock()})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	var ps []policies.Policy
	for i := range 6 {
		ps = append(ps, testPolicy(fmt.Sprintf("t%d", i)))
	}
	s.Apply(ps)
	eventually(t, "the first poll", func() bool { return len(poll.polled()) == 1 })
	first := poll.polled()[0]
	// The other five are due; t5's change event asks for it now.
	hinted := make(chan error, 1)
	go func() { hinted <- s.PollNow(context.Background(), "t5") }()
	eventually(t, "t5 urgent", func() bool {
		tb, _ := s.live("t5")
		s.wheel.mu.Lock()
		defer s.wheel.mu.Unlock()
		return tb.urgent || tb.hidx < 0 // at the front, or handed out already
	})
	for i := 1; i < 6; i++ {
		poll.release <- struct{}{}
		eventually(t, "next poll", func() bool { return len(poll.polled()) == i+1 })
	}
	poll.release <- struct{}{}
	if err := <-hinted; err != nil {
		t.Fatal(err)
	}
	order := poll.polled()
	pos := -1
	for i, name := range order {
		if name == "t5" && pos < 0 {
			pos = i
		}
	}
	// The table dispatch held for the busy worker when the event came may
	// go first; no other.
	if pos < 0 || pos > 2 {
		t.Fatalf("poll order %v (first %s): t5's requested poll came at %d, want by the third", order, first, pos+1)
	}
	poll.mu.Lock()
	most := poll.most
	poll.mu.Unlock()
	if most > 1 {
		t.Fatalf("%d polls ran at once with PollConcurrency 1", most)
	}
}

// An idle table costs no goroutine: watching 500 tables takes about the
// goroutines of watching 5 (the dispatcher and the poll workers).
func TestAnIdleTableHasNoGoroutineOfItsOwn(t *testing.T) {
	clock := newFakeClock()
	poll := &scriptedPoll{}
	poll.set(1, Backlog{})
	s := newTestScheduler(t, &recordingRun{}, poll, clock, 2)
	watch := func(n int) int {
		var ps []policies.Policy
		for i := range n {
			ps = append(ps, testPolicy(fmt.Sprintf("t%03d", i)))
		}
		s.Apply(ps)
		eventually(t, fmt.Sprintf("%d tables polled and idle", n), func() bool {
			sts := s.Status()
			for _, st := range sts {
				if st.Counters.Polls == 0 || st.State != StateIdle {
					return false
				}
			}
			return len(sts) == n
		})
		runtime.GC()
		return runtime.NumGoroutine()
	}
	few := watch(5)
	many := watch(500)
	if many-few > 20 {
		t.Fatalf("%d goroutines with 5 tables, %d with 500: idle tables hold goroutines", few, many)
	}
}
