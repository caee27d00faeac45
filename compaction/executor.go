package compaction

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/objstore"
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
// writer.Options.MaxConcurrentJobs at once (writer.RewriteEach). A job that
// fails on a transient store failure (objstore.Transient: an output whose
// upload the store kept refusing, a source read that ran out of attempts)
// and names no corrupt file is run again, up to JobRetries times, each
// retry spending one from the run's retry budget after a backoff; its
// failed attempt's outputs stay tracked in Work.Objects and go with the
// run's cleanup, the new attempt writes new keys.
type Local struct{}

var _ Executor = Local{}

// JobRetries bounds how many times Local runs a job again after a
// transient store failure.
const JobRetries = 2

// jobRetryBackoff is the wait before a job's first retry; it doubles with
// each further one.
const jobRetryBackoff = 500 * time.Millisecond

// Execute implements Executor.
func (Local) Execute(ctx context.Context, w Work, done func(Finished)) error {
	idx := make([]int, len(w.Jobs))
	for i := range idx {
		idx[i] = i
	}
	budget := objstore.BudgetFrom(ctx)
	for round := 0; ; round++ {
		jobs := make([]*writer.Job, len(idx))
		for j, i := range idx {
			jobs[j] = w.Jobs[i]
		}
		var again []int
		failed := map[int]error{}
		err := writer.RewriteEach(ctx, w.Table, w.Snapshot, jobs, w.Objects, w.Writer, func(j int, r *writer.Result, err error) {
			i := idx[j]
			if err != nil {
				if round < JobRetries && retriable(ctx, err) {
					again, failed[i] = append(again, i), err
					return
				}
				done(Finished{Index: i, Err: err})
				return
			}
			f := Finished{Index: i, Job: compactionJob(r), BytesRead: r.BytesRead, BytesWritten: r.BytesWritten}
			if r.Origins != nil {
				f.Release = func() { _ = r.Origins.Close() }
			}
			done(f)
		})
		if err != nil || len(again) == 0 {
			return err
		}
		sort.Ints(again)
		idx = idx[:0]
		for _, i := range again {
			if !budget.Take() {
				done(Finished{Index: i, Err: fmt.Errorf("%w; not run again: %w", failed[i], objstore.ErrBudgetExhausted)})
				continue
			}
			if w.Logger != nil {
				w.Logger.Warn("rewrite job failed on a store error; running it again", "job", w.Jobs[i].ID, "retry", round+1, "error", failed[i])
			}
			idx = append(idx, i)
		}
		if len(idx) == 0 {
			return nil
		}
		if err := objstore.Sleep(ctx, jobRetryBackoff<<round); err != nil {
			for _, i := range idx {
				done(Finished{Index: i, Err: failed[i]})
			}
			return nil
		}
	}
}

// retriable reports whether a job's error is a transient store failure
// worth running the job again for: not a corrupt file (quarantined
// instead), not the run's own end.
func retriable(ctx context.Context, err error) bool {
	return ctx.Err() == nil && objstore.Transient(err) && len(failure.CorruptDataFiles(err)) == 0
}
