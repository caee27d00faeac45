package compaction

import (
	"context"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/planner"
	"github.com/compactord/compactord/writer"
)

// Executor runs the rewrite jobs of one compaction run: Local (the run's own
// goroutines, the default) or a remote one that runs them elsewhere and
// reads back what they wrote (package fanout). The run commits what an
// executor hands it; an executor never commits.
type Executor interface {
	// Execute rewrites w's jobs and calls done once per job as it finishes,
	// in any order: with the job ready to commit, or with its error. done
	// may be called from any goroutine (the run serialises the calls) and
	// never blocks on a commit; it must not be called after Execute
	// returned. Execute returns when every job it started has ended, after
	// stopping them when ctx ends. Its error is a failure of the executor
	// itself (bad options, a lost launcher); a job it never reported
	// counts as failed.
	Execute(ctx context.Context, w Work, done func(Finished)) error
}

// Work is what an executor is given: one run's jobs, resolved against the
// run's read snapshot.
type Work struct {
	// Table is the table compacted.
	Table *delta.Table
	// Snapshot is the run's read snapshot (the plan's read version).
	Snapshot *delta.Snapshot
	// Plan is the plan the jobs come from; Jobs[i] is Plan.Jobs[i].
	Plan *planner.CompactionPlan
	// Jobs are the plan's jobs with their sources resolved in Snapshot.
	Jobs []*writer.Job
	// Objects is the run's attempt: every object written for a job must be
	// tracked here before it is created (a remote executor tracks its
	// workers' outputs as it learns of them), so that the run deletes what
	// it did not commit when it ends.
	Objects *attempt.Objects
	// Writer are the rewrite settings. Its SourceRead, when set, reports
	// the run's progress; a remote executor calls it for each source of a
	// job once the job has finished.
	Writer writer.Options
	// Logger receives the executor's events.
	Logger hclog.Logger
}

// Finished is one job an executor is done with.
type Finished struct {
	// Index is the job's index in Work.Jobs.
	Index int
	// Job is the rewritten job to commit (sources as read, outputs, the
	// composition runs or a sorted job's origin map); nil when Err is set.
	Job *commit.CompactionJob
	// BytesRead and BytesWritten are the job's source and output bytes.
	BytesRead, BytesWritten int64
	// Err is why the job failed (a corrupt source's error names it:
	// failure.CorruptFileError); its outputs are left to the run's cleanup.
	Err error
	// Release, when set, frees what the job holds until its commit (a
	// sorted job's origin map); the run calls it once, after the commit
	// that included or dropped the job, or when the run ends without one.
	Release func()
}

// Local is the default executor: the jobs run in this process,
// writer.Options.MaxConcurrentJobs at once (writer.RewriteEach).
type Local struct{}

var _ Executor = Local{}

// Execute implements Executor.
func (Local) Execute(ctx context.Context, w Work, done func(Finished)) error {
	return writer.RewriteEach(ctx, w.Table, w.Snapshot, w.Jobs, w.Objects, w.Writer, func(i int, r *writer.Result, err error) {
		if err != nil {
			done(Finished{Index: i, Err: err})
			return
		}
		f := Finished{Index: i, Job: compactionJob(r), BytesRead: r.BytesRead, BytesWritten: r.BytesWritten}
		if r.Origins != nil {
			f.Release = func() { _ = r.Origins.Close() }
		}
		done(f)
	})
}
