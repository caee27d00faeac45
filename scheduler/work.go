package scheduler

import (
	"context"
	"time"
)

// A table's work between two rests in the wheel (wheel.go): what is due or
// asked for, in the order the table's loop goroutine took it before the
// wheel replaced it: a trigger's run, PollNow's poll, then a retry, a cron
// run or a periodic poll when their time has come; a halted table only
// answers PollNow's callers and, with a HaltStore, checks the store once
// per poll interval.

// step is what a table does next.
type step int

const (
	stepParked    step = iota // nothing is due: the table is back in the wheel (or stopped)
	stepRun                   // run the table (reason, manual)
	stepPoll                  // the periodic poll
	stepPollNow               // PollNow's poll
	stepHaltCheck             // a halted table reads its stored halt
	stepAgain                 // look again (something was done under the lock)
)

// claim marks t as worked by the caller; false when another goroutine
// works it or it stopped.
func (t *table[P]) claim() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.busy || t.exited {
		return false
	}
	t.busy = true
	t.runCtx, t.cancelRun = context.WithCancel(t.s.runCtx)
	return true
}

// unclaim ends the caller's work on t and its context; t.mu is held.
func (t *table[P]) unclaim() {
	t.busy = false
	if t.cancelRun != nil {
		t.cancelRun()
		t.runCtx, t.cancelRun = nil, nil // a resting table keeps no context
	}
}

// wake brings t to the front of the wheel when no goroutine works it (the
// one that does looks at what was asked before it rests).
func (t *table[P]) wake() {
	t.mu.Lock()
	idle := !t.busy && !t.exited
	t.mu.Unlock()
	if idle {
		t.s.wheel.push(t, t.s.cfg.Clock.Now(), true)
	}
}

// exit ends t's work for good (it stopped, or the scheduler did).
func (t *table[P]) exit() {
	t.mu.Lock()
	t.unclaim()
	t.exited = true
	t.mu.Unlock()
	t.s.wheel.remove(t)
	t.doneOnce.Do(func() { close(t.done) })
}

// work does what is due for t and then rests it in the wheel. pooled says
// the caller is a poll worker: it polls, and hands a run to a goroutine of
// its own. Otherwise the caller is such a run's goroutine: it runs what
// follows the run (a trigger that came meanwhile) and gives anything else
// back to the poll workers through the wheel.
func (t *table[P]) work(pooled bool) {
	if !t.begun {
		t.begun = true
		// A halt stored before a restart (or by another replica) holds
		// before the first poll.
		if !t.readStoredHalt() {
			// Before the first poll, so that its backlog leaves the stored
			// quarantine apart, and before the first run, which must not
			// read a quarantined file again.
			t.loadQuarantine()
		}
	}
	for {
		if t.stopped() {
			t.exit()
			return
		}
		t.saveHalt()
		st, reason, manual := t.next(pooled)
		switch st {
		case stepParked:
			return
		case stepAgain:
		case stepRun:
			if pooled {
				t.runApart(reason, manual)
				return
			}
			t.attempt(reason, manual)
		case stepPollNow:
			if reason := t.pollNow(); reason != "" {
				t.runApart("poll:"+reason, false)
				return
			}
		case stepPoll:
			reason := t.poll()
			t.saveQuarantine(false) // drops the files the poll found gone
			if reason != "" {
				t.runApart("poll:"+reason, false)
				return
			}
		case stepHaltCheck:
			t.checkStoredHalt()
		}
	}
}

// next decides t's next step, under t.mu; when nothing is due it rests t
// in the wheel until its earliest time (stepParked). A goroutine that is
// not a poll worker rests t, due now, instead of polling.
func (t *table[P]) next(pooled bool) (st step, reason string, manual bool) {
	now := t.s.cfg.Clock.Now()
	t.mu.Lock()
	if t.halted {
		// A halted table does nothing until it is resumed (Resume, a
		// reload, a changed policy, or the store's halt cleared).
		if t.kick {
			if !pooled {
				return t.rest(now, true)
			}
			t.kick = false
			ws := t.pollWaiters
			t.pollWaiters = nil
			t.mu.Unlock()
			for _, w := range ws {
				close(w) // a halted table reads nothing until resumed
			}
			return stepAgain, "", false
		}
		if t.s.cfg.Halts == nil {
			t.unclaim() // no time of its own: only an event wakes it
			t.mu.Unlock()
			return stepParked, "", false
		}
		if t.haltCheck.IsZero() {
			t.haltCheck = now.Add(t.s.cfg.PollInterval)
		}
		if now.Before(t.haltCheck) {
			return t.rest(t.haltCheck, false)
		}
		if !pooled {
			return t.rest(now, false)
		}
		t.haltCheck = now.Add(t.s.cfg.PollInterval)
		t.mu.Unlock()
		return stepHaltCheck, "", false
	}
	if t.trigSet {
		reason = t.trigReason
		t.trigSet, t.trigReason = false, ""
		t.mu.Unlock()
		return stepRun, reason, true
	}
	if t.kick {
		if !pooled {
			return t.rest(now, true)
		}
		t.kick = false
		t.mu.Unlock()
		return stepPollNow, "", false
	}
	retryDue := !t.retryAt.IsZero() && !now.Before(t.retryAt)
	cronDue := t.spec.Schedule != nil && !now.Before(t.nextCron)
	pollDue := !now.Before(t.nextPoll)
	switch {
	case retryDue || cronDue:
		if cronDue {
			t.nextCron = t.spec.Schedule.Next(now)
		}
		t.mu.Unlock()
		if retryDue {
			return stepRun, ReasonRetry, false
		}
		return stepRun, ReasonSchedule, false
	case pollDue:
		if !pooled {
			return t.rest(now, false)
		}
		t.nextPoll = now.Add(t.s.cfg.PollInterval)
		t.mu.Unlock()
		return stepPoll, "", false
	}
	wake := t.nextPoll
	if t.spec.Schedule != nil && t.nextCron.Before(wake) {
		wake = t.nextCron
	}
	if !t.retryAt.IsZero() && t.retryAt.Before(wake) {
		wake = t.retryAt
	}
	return t.rest(wake, false)
}

// rest gives t back to the wheel, due at due; t.mu is held and released.
func (t *table[P]) rest(due time.Time, urgent bool) (step, string, bool) {
	t.unclaim()
	t.mu.Unlock()
	t.s.wheel.push(t, due, urgent)
	return stepParked, "", false
}

// checkStoredHalt is a halted table's look at its stored halt, once per
// poll interval: a halt the store no longer holds (another replica's
// resume or reload cleared it) is cleared here too.
func (t *table[P]) checkStoredHalt() {
	t.mu.Lock()
	check := t.halted && t.haltStored && !t.haltDirty
	t.mu.Unlock()
	if !check {
		return
	}
	if h, err := t.s.cfg.Halts.Load(t.runCtx, t.policy); err == nil && h == nil {
		t.resume("the stored halt was cleared (another replica's resume or reload)")
		t.mu.Lock()
		t.haltDirty = false // the store is already clear
		t.mu.Unlock()
	}
}

// runApart runs the table's due run on a goroutine of its own, which then
// works the table on, so that a poll worker does not wait for a run.
func (t *table[P]) runApart(reason string, manual bool) {
	t.s.wg.Add(1)
	go func() {
		defer t.s.wg.Done()
		t.attempt(reason, manual)
		t.work(false)
	}()
}
