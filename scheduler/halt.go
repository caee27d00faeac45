package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A halted table stays halted until an operator says the cause is fixed:
// Resume (POST /tables/{name}/resume), a reload (Apply re-checks every
// halted table, changed or not), or a changed policy. With a HaltStore the
// halt is kept where a restarted daemon, and every other replica, finds it:
// a table whose stored halt is in force does not run on any of them, and a
// resume on any of them clears it for all.

// Halt is a table's halt as a HaltStore keeps it.
type Halt struct {
	// Reason is the error that halted the table (cut to MaxHaltReason
	// bytes).
	Reason string `json:"reason"`
	// Since is when the table was halted.
	Since time.Time `json:"since"`
}

// MaxHaltReason bounds Halt.Reason, so that a stored halt stays small.
const MaxHaltReason = 2048

// HaltStore keeps each table's halt where a restart of the daemon and the
// other replicas find it. The scheduler reads a table's halt when the
// table starts and before each of its runs (one read per run), and while
// it is halted once per poll interval (so that a resume on another replica
// reaches it); it saves the halt when the table halts and clears it
// (Save with nil) when the table is resumed. Calls run on the goroutine
// working the table, never under the scheduler's locks.
type HaltStore[P any] interface {
	// Load returns the table's halt in force, nil when there is none (or
	// the stored one no longer applies, e.g. it was recorded under another
	// policy).
	Load(ctx context.Context, p P) (*Halt, error)
	// Save stores h as the table's halt; nil clears it.
	Save(ctx context.Context, p P, h *Halt) error
}

// ErrUnavailable is wrapped by errors of a table that is not there (yet)
// or cannot be read: its path does not exist, it has no _delta_log, the
// store refuses access. Such a table is not halted: it waits (StateWaiting)
// and is polled again with backoff, and starts working by itself once the
// table can be read.
var ErrUnavailable = errors.New("table not available")

// Unavailable marks err as a table that is not there or cannot be read
// (errors.Is(err, ErrUnavailable)); the error's text is err's.
func Unavailable(err error) error {
	if err == nil {
		return nil
	}
	return &unavailableError{err: err}
}

type unavailableError struct{ err error }

func (e *unavailableError) Error() string        { return e.err.Error() }
func (e *unavailableError) Unwrap() error        { return e.err }
func (e *unavailableError) Is(target error) bool { return target == ErrUnavailable }

// Waiting is why a table waits for its table to become readable, in
// /status (TableStatus.Waiting).
type Waiting struct {
	// Reason is the error of the last attempt.
	Reason string `json:"reason"`
	// Since is when the table started waiting.
	Since time.Time `json:"since"`
	// Attempts counts the attempts (polls and runs) that failed so.
	Attempts int `json:"attempts"`
	// NextAttempt is when the table is polled again.
	NextAttempt time.Time `json:"next_attempt"`
}

// Errors returned by Resume.
var (
	// ErrNotHalted: the table is not halted; nothing was done.
	ErrNotHalted = errors.New("table is not halted")
	// ErrPolicyInvalid: the table is halted because its policy is invalid
	// (a bad schedule); only a corrected policy and a reload clear it.
	ErrPolicyInvalid = errors.New("the table's policy is invalid")
)

// HaltAdvice is what a halt's log line and answers tell the operator to do.
func HaltAdvice(name string) string {
	return fmt.Sprintf("fix the cause, then POST /tables/%s/resume or reload (SIGHUP)", name)
}

// Resume clears the halt of a table: it polls at once and runs again as
// its triggers say, and the stored halt (Config.Halts) is cleared for
// every replica. When the cause is still there, its next poll or run
// halts it again. It returns ErrUnknownTable, ErrNotHalted, or
// ErrPolicyInvalid (the halt is the policy's own error).
func (s *Scheduler[P]) Resume(name string) error {
	s.mu.Lock()
	t, ok := s.tables[name]
	specErr := s.specErrs[name]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownTable, name)
	}
	if specErr != nil {
		return fmt.Errorf("%w: %s: %w", ErrPolicyInvalid, name, specErr)
	}
	if !t.resume("resume") {
		return fmt.Errorf("%w: %s", ErrNotHalted, name)
	}
	return nil
}

// resume clears t's halt (how says who asked, for the log) and brings it
// to the front of the wheel; it reports whether t was halted.
func (t *table[P]) resume(how string) bool {
	t.mu.Lock()
	if !t.halted {
		t.mu.Unlock()
		return false
	}
	reason := t.haltReason
	t.halted, t.haltReason, t.haltSince = false, "", time.Time{}
	t.haltDirty = t.s.cfg.Halts != nil
	t.state = StateIdle
	if !t.spec.Enabled {
		t.state = StateDisabled
	}
	t.failures, t.retryAt = 0, time.Time{}
	t.nextPoll = t.s.cfg.Clock.Now()
	t.haltCheck = time.Time{}
	t.mu.Unlock()
	t.log().Info("halt cleared; the table is polled again now", "by", how, "was", reason)
	t.wake()
	return true
}

// readStoredHalt adopts the stored halt of t, if one is in force, and
// reports whether t is halted now. A failed read is logged and changes
// nothing (the run or poll that follows meets the same store).
func (t *table[P]) readStoredHalt() bool {
	st := t.s.cfg.Halts
	t.mu.Lock()
	halted, skip := t.halted, t.haltDirty
	t.mu.Unlock()
	if st == nil || halted || skip {
		return halted
	}
	h, err := st.Load(t.runCtx, t.policy)
	if err != nil {
		if !errors.Is(err, ErrUnavailable) { // else the table is waiting; its poll says why
			t.log().Warn("reading the stored halt failed; going on", "error", err)
		}
		return false
	}
	if h == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.halted || t.haltDirty {
		return t.halted
	}
	t.halted, t.haltReason, t.haltSince, t.haltStored = true, h.Reason, h.Since, true
	t.firstPollOver()
	t.state = StateHalted
	t.retryAt = time.Time{}
	t.log().Error("table halted by its stored halt (this daemon before a restart, or another replica); "+HaltAdvice(t.spec.Name), "error", h.Reason, "since", h.Since)
	return true
}

// saveHalt stores t's halt, or clears the stored one, when that changed
// since the last save; a failed save is tried again later.
func (t *table[P]) saveHalt() {
	st := t.s.cfg.Halts
	t.mu.Lock()
	if st == nil || !t.haltDirty {
		t.mu.Unlock()
		return
	}
	var h *Halt
	if t.halted {
		h = &Halt{Reason: t.haltReason, Since: t.haltSince}
		if len(h.Reason) > MaxHaltReason {
			h.Reason = h.Reason[:MaxHaltReason]
		}
	}
	t.mu.Unlock()
	err := st.Save(t.runCtx, t.policy, h)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.log().Warn("storing the table's halt failed; trying again later", "halted", h != nil, "error", err)
		return
	}
	if t.halted == (h != nil) {
		t.haltDirty = false
		t.haltStored = h != nil
	}
}

// halt stops the table; t.mu must be held.
func (t *table[P]) halt(err error) {
	t.halted = true
	t.firstPollOver()
	t.haltReason = err.Error()
	t.haltSince = t.s.cfg.Clock.Now().UTC()
	t.haltDirty = t.s.cfg.Halts != nil
	t.waiting = nil
	t.state = StateHalted
	t.retryAt = time.Time{}
	t.log().Error("table halted; "+HaltAdvice(t.spec.Name), "error", err)
}

// wait records an attempt that found the table unavailable
// (ErrUnavailable) and backs its next poll off; t.mu must be held. A
// waiting table is not halted: it starts working by itself once a poll
// can read it.
func (t *table[P]) wait(err error, now time.Time) {
	if t.waiting == nil {
		t.waiting = &Waiting{Since: now.UTC()}
	}
	w := t.waiting
	w.Attempts++
	w.Reason = err.Error()
	d := Backoff(w.Attempts, t.s.cfg.BackoffBase, t.s.cfg.BackoffMax, t.s.cfg.Rand)
	w.NextAttempt = now.Add(d).UTC()
	t.nextPoll = now.Add(d)
	t.retryAt = time.Time{}
	t.state = StateWaiting
	if w.Attempts == 1 {
		t.log().Warn("the table cannot be read; waiting for it (polled again with backoff)", "error", err, "next_attempt", w.NextAttempt)
	} else {
		t.log().Debug("the table still cannot be read", "error", err, "attempts", w.Attempts, "next_attempt", w.NextAttempt)
	}
}
