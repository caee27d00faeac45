package commit

import (
	"context"
	"errors"

	"github.com/compactord/compactord/delta"
)

// ErrorClass says what the caller (the scheduler) should do about an error.
type ErrorClass int

const (
	// Retry: transient (lost commit races beyond the retry budget, a
	// concurrent metadata change, throttling, I/O hiccups). Run again later.
	Retry ErrorClass = iota
	// Quarantine: one input is bad (a corrupt file, a bad deletion vector).
	// Mark and skip it; keep the table moving.
	Quarantine
	// Halt: continuing could break an invariant (unsupported table feature,
	// a store that cannot put-if-absent, an inconsistent log). Stop this
	// table, keep the daemon up, alert.
	Halt
)

// String names the class.
func (c ErrorClass) String() string {
	switch c {
	case Retry:
		return "retry"
	case Quarantine:
		return "quarantine"
	case Halt:
		return "halt"
	}
	return "unknown"
}

// ClassError attaches an ErrorClass to an error.
type ClassError struct {
	Class ErrorClass
	Err   error
}

// Error implements error.
func (e *ClassError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *ClassError) Unwrap() error { return e.Err }

// WithClass wraps err with a class; nil stays nil.
func WithClass(c ErrorClass, err error) error {
	if err == nil {
		return nil
	}
	return &ClassError{Class: c, Err: err}
}

// Sentinel errors of this package.
var (
	// ErrConflict means the transaction lost to a concurrent commit it
	// cannot reconcile with (the whole attempt is abandoned).
	ErrConflict = errors.New("concurrent commit conflicts with this transaction")
	// ErrMetadataChanged means a winning commit changed the table's
	// protocol or metadata after the read version: re-plan.
	ErrMetadataChanged = errors.New("table protocol or metadata changed concurrently")
	// ErrTooManyAttempts means the retry budget ran out.
	ErrTooManyAttempts = errors.New("commit retry budget exhausted")
	// ErrNoPutIfAbsent means the table's store cannot write commits atomically.
	ErrNoPutIfAbsent = errors.New("store cannot put-if-absent; refusing to commit")
	// ErrInconsistentLog means the log contradicts what this transaction read.
	ErrInconsistentLog = errors.New("delta log is inconsistent with the read snapshot")
)

// Class returns the class of err: an explicit ClassError wins; a table
// feature this build does not implement halts; otherwise well-known
// sentinels are mapped; anything else is Retry (context
// cancellation included: the run was interrupted, not wrong).
func Class(err error) ErrorClass {
	if err == nil {
		return Retry
	}
	var ce *ClassError
	if errors.As(err, &ce) {
		return ce.Class
	}
	var fe *delta.UnsupportedFeatureError
	if errors.As(err, &fe) {
		return Halt
	}
	switch {
	case errors.Is(err, ErrNoPutIfAbsent), errors.Is(err, delta.ErrNoPutIfAbsent),
		errors.Is(err, ErrInconsistentLog), errors.Is(err, delta.ErrMalformedAction):
		return Halt
	case errors.Is(err, delta.ErrCorruptDV):
		return Quarantine
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return Retry
	}
	return Retry
}
