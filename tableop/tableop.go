package tableop

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/internal/progress"
)

// Op is one operation on one table, configured for one run. T is the
// table handle the operation runs on (the daemon's is *delta.Table); the
// seam names no table format itself.
type Op[T any] interface {
	// Name names the operation in reports, logs and metrics
	// ("compaction", "retention", ...).
	Name() string
	// Run applies the operation once to t and reports what it did. An
	// error's class (failure.Of) tells the scheduler to retry, to
	// quarantine the files the error names, or to halt the table.
	Run(ctx context.Context, t T) (Result, error)
}

// Env is what the daemon gives every operation of a run beside the table's
// policy.
type Env struct {
	// Exclude lists data file paths (as in add actions) quarantined by
	// earlier runs: an operation must not read them.
	Exclude map[string]bool
	// Now is the run's clock (default time.Now).
	Now func() time.Time
	// Logger receives the operation's logs, named after the table.
	Logger hclog.Logger
	// EngineInfo is commitInfo.engineInfo, e.g. "compactord/0.1.0".
	EngineInfo string
	// Progress, when set, receives the progress of the operation's long
	// phases (the daemon's progress log and /status).
	Progress progress.Func
}

// Factory makes one kind of operation: the daemon lists its factories in
// the order a run performs their operations. P is the table's policy (the
// daemon's is policies.Policy) and T the table handle its operations run
// on; each operation's package binds them (compaction.Factory and its
// siblings return a Factory[policies.Policy, *delta.Table]), so that this
// seam knows no policy file and no file format.
type Factory[P, T any] struct {
	// Name is the name of the operations New returns.
	Name string
	// New builds the table's operation for one run from its policy. ok is
	// false when the policy does not ask for the operation (for example no
	// retention block); an error (an invalid setting) fails the run.
	New func(p P, env Env) (op Op[T], ok bool, err error)
}

// Named returns the first factory of fs named name and its index, or -1
// when fs has none: the daemon finds an operation by its name, never by its
// place in the order.
func Named[P, T any](fs []Factory[P, T], name string) (Factory[P, T], int) {
	for i, f := range fs {
		if f.Name == name {
			return f, i
		}
	}
	return Factory[P, T]{}, -1
}

// Hold is one group of files an operation left alone on purpose, with the
// reason (for compaction, one of the planner's skip groups, which
// compaction.Holds maps onto it). The scheduler shows and logs holds
// without knowing their codes.
type Hold struct {
	// Code names the reason ("settling", "single_file_bin", "byte_cap",
	// "dropped", ...).
	Code string
	// Reason says it in one line, counts and policy values included
	// ("22 files younger than the settle window (settle window 15m; ...)").
	Reason string
	// Files and Bytes count the files held back.
	Files int
	Bytes int64
	// EligibleAt is when the first of them stops being held (the end of
	// its settle window); nil when time alone does not release them.
	EligibleAt *time.Time
}

// Result is what one operation did. Zero values mean "nothing".
type Result struct {
	// Committed is true when the operation committed a version; Version
	// is the latest it committed.
	Committed bool
	Version   int64
	// ReadVersion is the snapshot version the operation read.
	ReadVersion int64
	// FilesRemoved, BytesRemoved, FilesAdded and BytesAdded count the
	// data files its commits removed and added.
	FilesRemoved int
	BytesRemoved int64
	FilesAdded   int
	BytesAdded   int64
	// Conflicts counts concurrent commits met, by kind.
	Conflicts map[string]int
	// Counts are the operation's own numbers by name (documented by each
	// operation, e.g. "rows_expired"); they are summed per table and shown
	// in /status without the scheduler knowing what they mean.
	Counts map[string]int64
	// Quarantined lists data files found corrupt (the next run skips them).
	Quarantined []string
	// Held are the files the operation left alone on purpose, by reason:
	// why a run did nothing, or not all.
	Held []Hold
	// Done says, one line each, what the operation did that no commit
	// records ("checkpoint of version 10 written", "3 expired log files
	// deleted (12.0 KiB)"): an operation with Done and no commit did work,
	// and the scheduler shows it as done, not noop.
	Done []string
}

// NowOr returns env.Now(), or time.Now() when Env has no clock.
func (e Env) NowOr() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// LoggerOr returns env.Logger, or a null logger.
func (e Env) LoggerOr() hclog.Logger {
	if e.Logger != nil {
		return e.Logger
	}
	return hclog.NewNullLogger()
}
