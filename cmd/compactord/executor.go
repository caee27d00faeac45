package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/fanout"
)

// executorFlags choose where a run's rewrite jobs run: in this process
// (local) or fanned out to run-unit workers (process: local child
// processes; kubernetes: an Indexed Job; see executorKinds).
type executorFlags struct {
	kind        string
	parallelism int
	backoff     int
	maxUnits    int
	binary      string
	kube        kubeFlags
	// store are the command's --store-* flags, which the workers inherit.
	store *storeFlags
}

// register adds the executor flags to fs; store are the command's own
// --store-* flags, passed on to every worker.
func (e *executorFlags) register(fs *commandFlags, store *storeFlags) {
	e.store = store
	fs.StringVar(&e.kind, "executor", "local", "the `kind` of executor the rewrite jobs run on: "+strings.Join(executorNames(), " | ")+" (process: one compactord run-unit child process per unit; kubernetes: one Indexed Job, a pod per unit)")
	fs.IntVar(&e.parallelism, "parallelism", 2, "with a fanned-out executor: units run at once")
	fs.IntVar(&e.backoff, "backoff-limit-per-index", fanout.DefaultBackoffLimitPerIndex, "with a fanned-out executor: restarts of a unit whose worker failed with a retryable error or was killed")
	fs.IntVar(&e.maxUnits, "max-units", 0, "with a fanned-out executor: group the jobs into at most this many units (0: one job per unit)")
	fs.StringVar(&e.binary, "worker-binary", "", "with --executor process: the compactord binary the workers run (default: this one)")
	e.kube.register(fs)
}

// executorKind builds the executor of one --executor name. A launcher
// package adds its kind here (kubernetes: fanout/kubernetes's Launcher in
// a fanout.Executor).
type executorKind func(ctx context.Context, e *executorFlags, log hclog.Logger) (compaction.Executor, error)

// executorKinds are the --executor names and their constructors.
func executorKinds() map[string]executorKind {
	return map[string]executorKind{
		"local": func(context.Context, *executorFlags, hclog.Logger) (compaction.Executor, error) {
			return compaction.Local{}, nil
		},
		"process": func(_ context.Context, e *executorFlags, log hclog.Logger) (compaction.Executor, error) {
			return e.fanout(fanout.NewProcessLauncher(e.binary, log, e.store.workerArgs()...)), nil
		},
		"kubernetes": kubernetesExecutor,
	}
}

// fanout is the fanout.Executor of the flags around launcher l.
func (e *executorFlags) fanout(l fanout.Launcher) *fanout.Executor {
	backoff := e.backoff
	if backoff == 0 {
		backoff = -1 // no restarts asked for
	}
	return &fanout.Executor{Launcher: l, Parallelism: e.parallelism, BackoffLimitPerIndex: backoff,
		MaxUnits: e.maxUnits, EngineInfo: "compactord/" + version}
}

func executorNames() []string { return slices.Sorted(maps.Keys(executorKinds())) }

// apply sets o.Executor from the flags.
func (e *executorFlags) apply(ctx context.Context, o *compaction.RunOptions, log hclog.Logger) error {
	mk, ok := executorKinds()[e.kind]
	if !ok {
		return fmt.Errorf("%w: --executor %q: want %s", errUsage, e.kind, strings.Join(executorNames(), ", "))
	}
	if e.parallelism < 1 || e.backoff < 0 || e.maxUnits < 0 {
		return fmt.Errorf("%w: --parallelism must be at least 1, --backoff-limit-per-index and --max-units at least 0", errUsage)
	}
	ex, err := mk(ctx, e, log)
	if err != nil {
		return fmt.Errorf("--executor %s: %w", e.kind, err)
	}
	o.Executor = ex
	return nil
}
