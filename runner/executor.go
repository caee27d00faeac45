package runner

import (
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/fanout"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/tableop"
)

// LauncherFunc builds the fanout launcher of an executor block's kind for
// one run of a table; log is that run's logger (named after its policy).
type LauncherFunc func(e policies.Executor, log hclog.Logger) (fanout.Launcher, error)

// DefaultLaunchers are the launchers every daemon has: process (`compactord
// run-unit` children of the daemon's own binary, fanout.NewProcessLauncher:
// at --log-level warn, then workerArgs, e.g. the daemon's --store-* flags;
// their starts, exits and stderr lines logged to the run's logger). The
// kubernetes kind is added by the binary (package fanout/kubernetes).
func DefaultLaunchers(workerArgs ...string) map[string]LauncherFunc {
	return map[string]LauncherFunc{
		policies.ExecutorProcess: func(_ policies.Executor, log hclog.Logger) (fanout.Launcher, error) {
			return fanout.NewProcessLauncher("", log, workerArgs...), nil
		},
	}
}

// WithExecutor wraps the compaction factory f: a policy with an executor
// block of a kind other than local gets a fanout.BySize executor, its
// plans of at least min_backlog_bytes fanned out to launchers[kind]'s
// workers (parallelism, backoff_limit_per_index, max_units from the
// block), the rest run in this process.
func WithExecutor(f Factory, launchers map[string]LauncherFunc) Factory {
	inner := f.New
	f.New = func(p policies.Policy, env tableop.Env) (tableop.Op[*delta.Table], bool, error) {
		op, ok, err := inner(p, env)
		e := p.Executor
		if err != nil || !ok || e == nil || e.Kind == policies.ExecutorLocal {
			return op, ok, err
		}
		cop, isCompaction := op.(*compaction.Op)
		if !isCompaction {
			return nil, false, fmt.Errorf("executor %s: the %s operation is not a compaction", e.Kind, f.Name)
		}
		mk, known := launchers[e.Kind]
		if !known {
			return nil, false, fmt.Errorf("executor kind %q: this build has no launcher for it", e.Kind)
		}
		l, err := mk(*e, env.LoggerOr())
		if err != nil {
			return nil, false, fmt.Errorf("executor %s: %w", e.Kind, err)
		}
		backoff := e.BackoffLimitPerIndex
		if backoff == 0 {
			backoff = -1 // the block asks for no restarts
		}
		cop.Options.Executor = fanout.BySize{MinBytes: e.MinBacklogBytes, Remote: &fanout.Executor{Launcher: l,
			Parallelism: e.Parallelism, BackoffLimitPerIndex: backoff, MaxUnits: e.MaxUnits, EngineInfo: cop.Options.EngineInfo}}
		return cop, true, nil
	}
	return f
}
