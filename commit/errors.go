package commit

import (
	"errors"

	"github.com/compactord/compactord/failure"
)

// Sentinel errors of this package. Their classes (package failure) say
// what the scheduler does: a lost race is retried, an inconsistent log
// halts the table.
var (
	// ErrConflict means the transaction lost to a concurrent commit it
	// cannot reconcile with (the whole attempt is abandoned).
	ErrConflict = errors.New("concurrent commit conflicts with this transaction")
	// ErrMetadataChanged means a winning commit changed the table's
	// protocol or metadata after the read version: re-plan.
	ErrMetadataChanged = errors.New("table protocol or metadata changed concurrently")
	// ErrTooManyAttempts means the retry budget ran out.
	ErrTooManyAttempts = errors.New("commit retry budget exhausted")
	// ErrInconsistentLog means the log contradicts what this transaction read.
	ErrInconsistentLog = failure.New(failure.Halt, "delta log is inconsistent with the read snapshot")
)
