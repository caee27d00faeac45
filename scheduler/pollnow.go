package scheduler

import (
	"context"
	"fmt"
)

// PollNow asks for a poll of one table now and waits until a poll that
// started after the call has finished: the table's log has been read and,
// when its triggers fire, the run is queued (PollNow does not wait for
// it). It is how a change event (package events) makes the scheduler look
// at a table early; the scheduler still decides whether anything runs.
// Requests coalesce: callers waiting together share one poll, so a burst
// of duplicate hints costs one read of the log. A halted table is not
// polled (ErrHalted); a disabled one is, as its periodic poll is. The wait
// ends early with ctx's error, or ErrStopping when the table or the
// scheduler stops.
func (s *Scheduler[P]) PollNow(ctx context.Context, name string) error {
	t, err := s.live(name)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	t.mu.Lock()
	if t.halted {
		t.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrHalted, name)
	}
	t.pollWaiters = append(t.pollWaiters, done)
	t.mu.Unlock()
	select {
	case t.pollKick <- struct{}{}:
	default: // a poll is already asked for and has not started: it serves this caller too
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.done:
		return ErrStopping
	case <-s.stopping:
		return ErrStopping
	}
}

// takePollWaiters returns the callers of PollNow waiting now and forgets
// them: the poll about to start serves them.
func (t *table[P]) takePollWaiters() []chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	ws := t.pollWaiters
	t.pollWaiters = nil
	return ws
}

// pollNow is the loop's answer to PollNow: one poll for every caller
// waiting when it starts, released once the log is read and before any
// run the poll fires.
func (t *table[P]) pollNow() {
	ws := t.takePollWaiters()
	t.mu.Lock()
	t.counters.RequestedPolls++
	t.mu.Unlock()
	reason := ""
	if !t.stopped() {
		reason = t.poll()
		t.saveQuarantine(false)
	}
	for _, w := range ws {
		close(w)
	}
	if reason != "" {
		t.attempt("poll:"+reason, false)
	}
}

// releasePollWaiters answers the callers of PollNow without a poll (the
// table halted while they waited: it reads nothing until resumed).
func (t *table[P]) releasePollWaiters() {
	for _, w := range t.takePollWaiters() {
		close(w)
	}
}
