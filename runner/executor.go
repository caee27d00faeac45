package runner

import (
	"fmt"
	"slices"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/fanout"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/tableop"
)

// LauncherFunc builds the fanout launcher of an executor block's kind.
type LauncherFunc func(e policies.Executor) (fanout.Launcher, error)

// DefaultLaunchers are the launchers every daemon has: process (`compactord
// run-unit` children of the daemon's own binary, with workerArgs after
// `run-unit --plan URL`, e.g. the daemon's --store-* flags). The kubernetes
// kind is added by the binary (package fanout/kubernetes).
func DefaultLaunchers(workerArgs ...string) map[string]LauncherFunc {
	return map[string]LauncherFunc{
		policies.ExecutorProcess: func(policies.Executor) (fanout.Launcher, error) {
			return &fanout.ProcessLauncher{Args: slices.Clone(workerArgs)}, nil
		},
	}
}

// WithExecutor wraps the compaction factory f: a policy with an executor
// block of a kind other than local gets a fanout.BySize executor, its
// plans of at least min_backlog_bytes fanned out to launchers[kind]'s
// workers (parallelism, backoff_limit_per_index, max_units from the
// block), the rest run in this process.
func WithExecutor(f tableop.Factory, launchers map[string]LauncherFunc) tableop.Factory {
	inner := f.New
	f.New = func(p policies.Policy, env tableop.Env) (tableop.Op, bool, error) {
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
		l, err := mk(*e)
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
