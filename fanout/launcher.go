package fanout

import "context"

// IndexEnv is the environment variable a worker reads its unit index from:
// the name Kubernetes' Indexed Job controller sets in every pod.
const IndexEnv = "JOB_COMPLETION_INDEX"

// Exit codes of `compactord run-unit`. A launcher maps them onto a unit's
// fate: ExitOK and ExitRetry are the usual success and retryable failure;
// ExitQuarantine and ExitHalt fail the unit at once (Kubernetes:
// podFailurePolicy action FailIndex), since running it again reads the same
// bad object or refused table.
const (
	// ExitOK: the unit's outputs and result manifest are written.
	ExitOK = 0
	// ExitRetry: a failure another attempt may not meet (store fault,
	// killed pod, deadline).
	ExitRetry = 1
	// ExitUsage: the worker was started wrongly (flags, missing index).
	ExitUsage = 2
	// ExitQuarantine: a source object's content is bad
	// (failure.Quarantine); the unit must not be retried.
	ExitQuarantine = 3
	// ExitHalt: the table must not be written (failure.Halt); the unit
	// must not be retried.
	ExitHalt = 4
)

// LaunchSpec says what to run: the units [0, Units) of the plan stored at
// PlanURL.
type LaunchSpec struct {
	// PlanID names the stored plan (the <id> of _compactord/plans/<id>/).
	PlanID string
	// PlanURL is what each worker gets as `run-unit --plan URL`.
	PlanURL string
	// Table is the table URL (for labels and logs).
	Table string
	// Units is the number of units (the Job's completions).
	Units int
	// Parallelism is how many units run at once (at least 1).
	Parallelism int
	// BackoffLimitPerIndex is how many times a unit failing with ExitRetry
	// is started again before it counts as failed.
	BackoffLimitPerIndex int
}

// UnitStatus is the final state of one unit, reported once per unit.
type UnitStatus struct {
	// Index is the unit's index (JOB_COMPLETION_INDEX).
	Index int
	// Succeeded is true when a worker for the unit exited with ExitOK: its
	// result manifest is there to read.
	Succeeded bool
	// ExitCode is the last attempt's exit code (-1 when unknown, e.g. a
	// deleted pod or a signal).
	ExitCode int
	// Attempts counts the workers started for the unit.
	Attempts int
	// Reason says why a failed unit failed, for logs and reports.
	Reason string
}

// Launcher starts the workers of a stored plan. Launch starts every unit of
// spec (at most spec.Parallelism at once), calls report exactly once per
// unit as it reaches its final state (from any goroutine, but never
// concurrently), and returns when every unit is final, or when ctx ends,
// after stopping what it started. Implementations: ProcessLauncher (local
// `compactord run-unit` processes) and fanout/kubernetes (an Indexed Job).
type Launcher interface {
	Launch(ctx context.Context, spec LaunchSpec, report func(UnitStatus)) error
}
