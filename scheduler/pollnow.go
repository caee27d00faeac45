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
	t.kick = true // a poll asked for and not started yet serves this caller too
	t.mu.Unlock()
	t.wake()
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

// pollNow is the answer to PollNow: one poll for every caller waiting
// when it starts, released once the log is read and before any run the
// poll fires; it returns the trigger that fires ("" when none).
func (t *table[P]) pollNow() string {
	ws := t.takePollWaiters()
	t.mu.Lock()
	t.counters.RequestedPolls++
	if now := t.s.cfg.Clock.Now(); !now.Before(t.nextPoll) {
		// The periodic poll due now is this one.
		t.nextPoll = now.Add(t.s.cfg.PollInterval)
	}
	t.mu.Unlock()
	reason := ""
	if !t.stopped() {
		reason = t.poll()
		t.saveQuarantine(false)
	}
	for _, w := range ws {
		close(w)
	}
	return reason
}
