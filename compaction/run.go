package compaction

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/attemptsweep"
	"github.com/compactord/compactord/internal/deletegate"
	"github.com/compactord/compactord/internal/progress"
	"github.com/compactord/compactord/planner"
)

// runOnSnapshot runs a plan on its read snapshot: the executor rewrites the
// jobs, and the run commits them as they finish, in batches (RunOptions
// CommitEveryJobs, CommitInterval) or all at once at the end.
//
// A batch commit that fails stops the run: the executor is canceled, the
// jobs not yet committed are abandoned (JobsAbandoned) and their outputs
// deleted with everything else the run wrote and did not commit; the
// batches committed before stay committed, and the error says so. A job
// whose rewrite failed is left out (JobsFailed) and the others go on.
func runOnSnapshot(ctx context.Context, t *delta.Table, snap *delta.Snapshot, pl *planner.CompactionPlan, opts RunOptions) (*RunResult, error) {
	res := &RunResult{Table: t.URL, ReadVersion: snap.Version, CommittedVersion: -1, JobsPlanned: len(pl.Jobs),
		CommittedVersions: []int64{}, Reconciled: []commit.Reconciliation{}, Conflicts: map[string]int{},
		Dropped: []commit.DroppedJob{}, Skipped: pl.Skipped, ConsideredFiles: pl.Considered.Files}
	if res.Skipped == nil {
		res.Skipped = []planner.Skip{}
	}
	if opts.CommitEveryJobs < 0 || opts.CommitInterval < 0 {
		return nil, fmt.Errorf("run on %s: commit every %d jobs / %s: must not be negative", t.URL, opts.CommitEveryJobs, opts.CommitInterval)
	}
	// The next run cleans up after a killed one: dead intent records'
	// uncommitted objects go (a failed sweep is retried by the next run).
	swept := attemptsweep.AtStart(ctx, t, opts.AttemptStaleAfter, opts.Logger, opts.Snapshots)
	res.SweptAttempts, res.SweptObjects = swept.Records, swept.Objects
	if len(pl.Jobs) == 0 {
		return res, nil
	}
	jobs, err := writerJobs(snap, pl)
	if err != nil {
		return nil, fmt.Errorf("run plan on %s: %w", t.URL, err)
	}
	// The run owns its attempt: every object written for it is tracked in
	// objs (and, before it is created, in the attempt's intent record, for
	// the next run to clean up after a kill), and whatever no commit
	// published is deleted on every exit path (failed, dropped and
	// abandoned jobs, failed or canceled commits).
	j, err := attempt.StartJournal(ctx, t.Bucket, "compaction", attempt.JournalOptions{})
	if err != nil {
		return nil, fmt.Errorf("run on %s: %w", t.URL, err)
	}
	r := &run{t: t, snap: snap, opts: opts, res: res, objs: &attempt.Objects{}, journal: j, total: len(jobs)}
	r.objs.OnTrack(j.Track)
	r.cop = opts.Commit
	// The run's batches all commit against its read snapshot: each one
	// catches up from there, so the versions are read once and shared.
	r.cop.Log = &commit.LogCache{}
	if r.cop.OperationParameters == nil {
		r.cop.OperationParameters = pl.OperationParameters
	}
	defer r.clean(ctx)
	w := Work{Table: t, Snapshot: snap, Plan: pl, Jobs: jobs, Objects: r.objs, Writer: opts.Writer, Logger: opts.Logger}
	if opts.Progress != nil {
		var files, bytes int64
		for _, j := range jobs {
			for _, s := range j.Sources {
				files++
				bytes += s.Size
			}
		}
		tr := progress.Start(opts.Progress, "compaction", "rewrite", files, bytes, opts.Now())
		prev := w.Writer.SourceRead
		w.Writer.SourceRead = func(src *actions.Add) {
			if prev != nil {
				prev(src)
			}
			tr.Add(1, src.Size)
		}
	}
	execErr := r.execute(ctx, w)
	return r.result(ctx, execErr)
}

// run is the state of one run's commits.
type run struct {
	t       *delta.Table
	snap    *delta.Snapshot
	opts    RunOptions
	cop     commit.CompactionOptions
	res     *RunResult
	objs    *attempt.Objects
	journal *attempt.Journal
	total   int

	pending    []Finished // finished, waiting for a commit
	unreleased []Finished // handed over, Release not yet called
	jobErrs    []error
	reported   int
	commitErr  error
}

// execute runs the executor on its own goroutine and commits what it hands
// over while it goes on. It returns the executor's own error once the
// executor has returned (so nothing writes for the run any more).
func (r *run) execute(ctx context.Context, w Work) error {
	execCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Each job is handed over at most once, so the channel never blocks
	// done: the executor's rewrites never wait for a commit.
	finished := make(chan Finished, len(w.Jobs))
	var mu sync.Mutex
	closed := false
	seen := make([]bool, len(w.Jobs))
	done := func(f Finished) {
		mu.Lock()
		defer mu.Unlock()
		if closed || f.Index < 0 || f.Index >= len(seen) || seen[f.Index] {
			r.opts.Logger.Error("executor reported a job twice, out of range or after it returned; ignored", "table", r.t.URL, "job", f.Index)
			if f.Release != nil {
				f.Release()
			}
			return
		}
		seen[f.Index] = true
		finished <- f
	}
	errc := make(chan error, 1)
	go func() {
		err := r.opts.Executor.Execute(execCtx, w, done)
		mu.Lock()
		closed = true
		mu.Unlock()
		errc <- err
		close(finished)
	}()
	every, interval := r.opts.CommitEveryJobs, r.opts.CommitInterval
	var timer *time.Timer
	var due <-chan time.Time
	overdue := false // the interval passed while no job was waiting
	if interval > 0 {
		timer = time.NewTimer(interval)
		defer timer.Stop()
		due = timer.C
	}
	commit := func(n int) {
		batch := r.pending[:n]
		r.pending = slices.Clone(r.pending[n:])
		if err := r.commit(ctx, batch); err != nil {
			r.commitErr = err
			cancel()
		}
		if timer != nil {
			timer.Reset(interval)
			overdue = false
		}
	}
	for {
		select {
		case f, ok := <-finished:
			if !ok {
				return <-errc
			}
			r.reported++
			if f.Release != nil {
				r.unreleased = append(r.unreleased, f)
			}
			switch {
			case r.commitErr != nil || ctx.Err() != nil:
				// Stopping: whatever a job did (or the cancel made it
				// do), it is not committed.
				r.res.JobsAbandoned++
			case f.Err != nil || f.Job == nil:
				r.res.JobsFailed++
				r.jobErrs = append(r.jobErrs, cmp.Or(f.Err, fmt.Errorf("job %d: executor returned no job", f.Index)))
			default:
				r.pending = append(r.pending, f)
				switch {
				case every > 0 && len(r.pending) >= every:
					commit(every)
				case overdue:
					commit(len(r.pending))
				}
			}
		case <-due:
			if len(r.pending) > 0 && r.commitErr == nil && ctx.Err() == nil {
				commit(len(r.pending))
			} else {
				overdue = true
			}
		}
	}
}

// commit commits one batch against the run's read snapshot and adds what it
// did to the run's result; then it releases the batch's jobs.
func (r *run) commit(ctx context.Context, batch []Finished) error {
	defer r.release(batch)
	slices.SortFunc(batch, func(a, b Finished) int { return cmp.Compare(a.Index, b.Index) })
	jobs := make([]*commit.CompactionJob, len(batch))
	written := make(map[*commit.CompactionJob]Finished, len(batch))
	for i, f := range batch {
		jobs[i] = f.Job
		written[f.Job] = f
	}
	cop := r.cop
	if r.batching() {
		// Delta's OPTIMIZE numbers the commits of one command in
		// operationParameters.batchId.
		cop.OperationParameters = maps.Clone(cop.OperationParameters)
		if cop.OperationParameters == nil {
			cop.OperationParameters = map[string]any{}
		}
		cop.OperationParameters["batchId"] = strconv.Itoa(r.res.Commits)
	}
	res := r.res
	out, err := commit.CommitCompaction(ctx, r.t, r.snap, jobs, r.objs, cop)
	if out != nil {
		for k, n := range out.Conflicts {
			res.Conflicts[k] += n
		}
		res.Dropped = append(res.Dropped, out.Dropped...)
		res.JobsDropped += len(out.Dropped)
	}
	if err != nil {
		res.JobsAbandoned += len(batch)
		if out != nil {
			res.JobsAbandoned -= len(out.Dropped)
		}
		if res.Commits > 0 {
			return fmt.Errorf("commit compaction of %s (batch %d of %d jobs; %d batches committed before, up to version %d): %w",
				r.t.URL, res.Commits+1, len(batch), res.Commits, res.CommittedVersion, err)
		}
		return fmt.Errorf("commit compaction of %s: %w", r.t.URL, err)
	}
	if out.Version < 0 {
		return nil // every job of the batch was dropped
	}
	res.Commits++
	res.CommittedVersion = out.Version
	res.CommittedVersions = append(res.CommittedVersions, out.Version)
	res.JobsCommitted += len(out.Committed)
	res.FilesRemoved += out.FilesRemoved
	res.FilesAdded += out.FilesAdded
	res.Reconciled = append(res.Reconciled, out.Reconciled...)
	for _, cj := range out.Committed {
		res.BytesRead += written[cj].BytesRead
		res.BytesWritten += written[cj].BytesWritten
	}
	if r.batching() {
		r.opts.Logger.Info("compaction batch committed", "table", r.t.URL, "version", out.Version, "batch", res.Commits,
			"jobs", len(out.Committed), "jobs_committed", res.JobsCommitted, "jobs_planned", res.JobsPlanned)
	}
	return nil
}

func (r *run) batching() bool { return r.opts.CommitEveryJobs > 0 || r.opts.CommitInterval > 0 }

// release calls the Release of the jobs given (once per job).
func (r *run) release(fs []Finished) {
	for _, f := range fs {
		i := slices.IndexFunc(r.unreleased, func(u Finished) bool { return u.Index == f.Index })
		if i < 0 {
			continue
		}
		r.unreleased[i].Release()
		r.unreleased = slices.Delete(r.unreleased, i, i+1)
	}
}

// result commits what is still waiting (unless the run is stopping) and
// says what the run did.
func (r *run) result(ctx context.Context, execErr error) (*RunResult, error) {
	res := r.res
	res.JobsFailed += r.total - r.reported
	if r.commitErr == nil && ctx.Err() == nil && len(r.pending) > 0 {
		if err := r.commit(ctx, r.pending); err != nil {
			r.commitErr = err
		}
		r.pending = nil
	}
	res.JobsAbandoned += len(r.pending)
	switch {
	case r.commitErr != nil:
		return res, r.commitErr
	case ctx.Err() != nil && res.Commits == 0:
		return nil, fmt.Errorf("run on %s: %w", r.t.URL, ctx.Err())
	case ctx.Err() != nil:
		return res, fmt.Errorf("run on %s: stopped after %d commits (up to version %d), %d jobs not committed: %w",
			r.t.URL, res.Commits, res.CommittedVersion, res.JobsAbandoned+res.JobsFailed, ctx.Err())
	case execErr != nil:
		return res, fmt.Errorf("run on %s: executor: %w", r.t.URL, execErr)
	}
	if len(r.jobErrs) > 0 {
		// A corrupt source's error names it and carries its class
		// (failure.CorruptFileError: Quarantine).
		rewriteErr := errors.Join(r.jobErrs...)
		r.opts.Logger.Warn("some rewrite jobs failed", "table", r.t.URL, "failed", res.JobsFailed, "error", rewriteErr)
		return res, fmt.Errorf("run on %s: %d of %d jobs failed to rewrite: %w", r.t.URL, res.JobsFailed, r.total, rewriteErr)
	}
	return res, nil
}

// clean ends a run's attempt: it releases the jobs still holding something
// (sorted jobs' origin maps) and deletes every object written for the run
// that no commit published. It runs after the executor returned.
func (r *run) clean(ctx context.Context) {
	r.release(slices.Clone(r.unreleased))
	n, err := deletegate.EndAttempt(ctx, r.t.Bucket, r.t.URL, r.objs, r.journal, r.opts.Logger)
	if err != nil {
		r.opts.Logger.Warn("delete uncommitted outputs", "table", r.t.URL, "error", err)
	}
	if n > 0 {
		r.opts.Logger.Info("deleted uncommitted outputs", "table", r.t.URL, "objects", n)
	}
}
