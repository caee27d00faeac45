package tableop

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/progress"
	"github.com/compactord/compactord/planner"
	"github.com/compactord/compactord/policies"
)

// Op is one operation on one table, configured for one run.
type Op interface {
	// Name names the operation in reports, logs and metrics
	// ("compaction", "retention", ...).
	Name() string
	// Run applies the operation once to t and reports what it did. An
	// error's class (failure.Of) tells the scheduler to retry, to
	// quarantine the files the error names, or to halt the table.
	Run(ctx context.Context, t *delta.Table) (Result, error)
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
// the order a run performs their operations.
type Factory struct {
	// Name is the name of the operations New returns.
	Name string
	// New builds the table's operation for one run from its policy. ok is
	// false when the policy does not ask for the operation (for example no
	// retention block); an error (an invalid setting) fails the run.
	New func(p policies.Policy, env Env) (op Op, ok bool, err error)
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
	// Held are the files the operation left alone on purpose, by reason
	// (the planner's skip groups): why a run did nothing, or not all.
	Held []planner.Skip
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
