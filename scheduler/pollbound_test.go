package scheduler

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/compactord/compactord/policies"
)

// gatedPoll is a PollFunc fake whose polls wait for a release and that
// records how many ran at once.
type gatedPoll struct {
	release chan struct{}

	mu             sync.Mutex
	inflight, most int
	done           int
}

func (g *gatedPoll) poll(ctx context.Context, p policies.Policy, lastSeen int64) (PollResult, error) {
	g.mu.Lock()
	g.inflight++
	g.most = max(g.most, g.inflight)
	g.mu.Unlock()
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	g.mu.Lock()
	g.inflight--
	g.done++
	g.mu.Unlock()
	return PollResult{Version: 1, Changed: lastSeen < 1, Backlog: &Backlog{}}, nil
}

func (g *gatedPoll) state() (inflight, most, done int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inflight, g.most, g.done
}

func TestPollsRunAtMostPollConcurrencyAtOnce(t *testing.T) {
	const tables, bound = 6, 2
	poll := &gatedPoll{release: make(chan struct{})}
	run := &recordingRun{}
	s := New(Config[policies.Policy]{Spec: policySpec, Same: samePolicy, Run: run.run, Poll: poll.poll,
		Workers: 1, PollInterval: time.Hour, PollConcurrency: bound, Clock: newFakeClock()})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	var ps []policies.Policy
	for i := range tables {
		ps = append(ps, testPolicy(fmt.Sprintf("t%d", i)))
	}
	s.Apply(ps)
	for i := range tables {
		eventually(t, "polls waiting", func() bool {
			in, _, _ := poll.state()
			return in >= min(bound, tables-i)
		})
		poll.release <- struct{}{}
		eventually(t, "poll done", func() bool { _, _, done := poll.state(); return done == i+1 })
	}
	if _, most, _ := poll.state(); most > bound {
		t.Fatalf("%d polls ran at once; the bound is %d", most, bound)
	}
}
