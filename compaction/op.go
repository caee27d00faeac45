package compaction

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/attemptsweep"
	"github.com/compactord/compactord/planner"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/tableop"
)

// Name is the compaction operation's name in policies, reports and metrics.
const Name = "compaction"

// Counts that the compaction operation reports (tableop.Result.Counts),
// beside its start-of-run sweep's (attemptsweep.CountAttempts,
// attemptsweep.CountObjects).
const (
	CountJobsPlanned     = "jobs_planned"
	CountJobsCommitted   = "jobs_committed"
	CountJobsDropped     = "jobs_dropped"
	CountReconciliations = "reconciliations"
	CountReconciledRows  = "reconciled_rows"
	// CountCommits counts the run's commits: more than one when it
	// committed in batches (commit_every_jobs, commit_interval).
	CountCommits = "commits"
)

// Factory returns the compaction operation's factory: every policy
// compacts. template is the base of every run's options (tests and the demo
// set commit hooks or a snapshot cache there); the policy fills in the
// planner policy and the writer settings, env the exclusions, logger and
// clock.
func Factory(template RunOptions) tableop.Factory[policies.Policy, *delta.Table] {
	return tableop.Factory[policies.Policy, *delta.Table]{Name: Name, New: func(p policies.Policy, env tableop.Env) (tableop.Op[*delta.Table], bool, error) {
		return &Op{Options: OptionsFor(p, env, template)}, true, nil
	}}
}

// OptionsFor returns the run options of a compaction of p's table: what the
// daemon runs and what its plan preview shows.
func OptionsFor(p policies.Policy, env tableop.Env, template RunOptions) RunOptions {
	o := template
	o.Policy = p.PlannerPolicy(env.NowOr())
	o.Exclude = env.Exclude
	o.Logger = env.LoggerOr()
	if env.Progress != nil {
		o.Progress = env.Progress
	}
	if o.EngineInfo == "" {
		o.EngineInfo = env.EngineInfo
	}
	if o.Now == nil && env.Now != nil {
		o.Now = env.Now
	}
	o.Writer = p.WriterOptions(o.Writer)
	if o.CommitEveryJobs == 0 {
		o.CommitEveryJobs = p.CommitEveryJobs
	}
	if o.CommitInterval == 0 {
		o.CommitInterval = p.CommitInterval
	}
	return o
}

// Op is one compaction of a table with fixed options.
type Op struct {
	Options RunOptions
}

var _ tableop.Op[*delta.Table] = (*Op)(nil)

// Name implements tableop.Op.
func (*Op) Name() string { return Name }

// Run implements tableop.Op: one Compact. Data files that a rewrite found
// corrupt are named by the error (failure.CorruptFileError, class
// Quarantine) and listed in Result.Quarantined, so that the next run skips
// them without reading anything again to find them.
func (o *Op) Run(ctx context.Context, t *delta.Table) (tableop.Result, error) {
	res, err := Compact(ctx, t, o.Options)
	var out tableop.Result
	if res != nil {
		out = result(res)
	}
	if bad := failure.CorruptDataFiles(err); len(bad) > 0 {
		out.Quarantined = bad
		o.Options.withDefaults().Logger.Warn("corrupt data files; quarantining them", "table", t.URL, "files", bad)
	}
	return out, err
}

// result converts a compaction result to the operation's report.
func result(r *RunResult) tableop.Result {
	var rows int64
	for _, rc := range r.Reconciled {
		rows += rc.RowsRemapped
	}
	counts := map[string]int64{
		CountJobsPlanned:     int64(r.JobsPlanned),
		CountJobsCommitted:   int64(r.JobsCommitted),
		CountJobsDropped:     int64(r.JobsDropped),
		CountReconciliations: int64(len(r.Reconciled)),
		CountReconciledRows:  rows,
		CountCommits:         int64(r.Commits),
	}
	maps.Copy(counts, attemptsweep.Result{Records: r.SweptAttempts, Objects: r.SweptObjects}.Counts())
	return tableop.Result{
		Committed:    r.CommittedVersion >= 0,
		Version:      r.CommittedVersion,
		ReadVersion:  r.ReadVersion,
		FilesRemoved: r.FilesRemoved,
		BytesRemoved: r.BytesRead,
		FilesAdded:   r.FilesAdded,
		BytesAdded:   r.BytesWritten,
		Conflicts:    r.Conflicts,
		Held:         Holds(append(slices.Clip(r.Skipped), droppedHold(r.Dropped)...)),
		Counts:       counts,
	}
}

// Holds maps the planner's skip groups onto the operations' holds (the
// reason in one line, Skip.String, with its policy values): what a run's
// Result.Held and the daemon's backlog show. It is the one mapping of a
// planner.Skip onto a tableop.Hold, so that tableop need not know the
// planner.
func Holds(sks []planner.Skip) []tableop.Hold {
	if len(sks) == 0 {
		return nil
	}
	out := make([]tableop.Hold, len(sks))
	for i, sk := range sks {
		out[i] = tableop.Hold{Code: string(sk.Code), Reason: sk.String(), Files: sk.Files, Bytes: sk.Bytes, EligibleAt: sk.EligibleAt}
	}
	return out
}

// HeldDropped is the code of the hold that names the jobs a concurrent
// commit made the run drop (their files were rewritten or removed first).
const HeldDropped planner.SkipCode = "dropped"

// droppedHold is the hold of a run's dropped jobs, so that the run's
// "why" says what another writer did (and, when it was another compactord,
// what to set) instead of "no operation found work to do". The first
// job's reason stands for all of them.
func droppedHold(dropped []commit.DroppedJob) []planner.Skip {
	if len(dropped) == 0 {
		return nil
	}
	files := 0
	for _, d := range dropped {
		files += len(d.Sources)
	}
	detail := dropped[0].Reason
	if len(dropped) > 1 {
		detail += fmt.Sprintf("; %d more jobs dropped", len(dropped)-1)
	}
	return []planner.Skip{{Code: HeldDropped, Reason: "were left as they were: a concurrent commit changed them while they were rewritten", Files: files, Detail: detail}}
}
