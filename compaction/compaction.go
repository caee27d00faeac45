package compaction

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/progress"
	"github.com/compactord/compactord/planner"
	"github.com/compactord/compactord/writer"
)

// RunOptions configure one compaction run.
type RunOptions struct {
	// Policy is the planning policy (Now defaults to the run's clock).
	Policy planner.Policy
	// Writer tunes the rewrite.
	Writer writer.Options
	// Commit tunes the commit (retries, clock, test hooks).
	Commit commit.CompactionOptions
	// Exclude lists data file paths (as in add actions) the run must not
	// read (quarantined by earlier runs).
	Exclude map[string]bool
	// EngineInfo is commitInfo.engineInfo, e.g. "compactord/0.1.0".
	EngineInfo string
	// Logger receives run events (default: null logger).
	Logger hclog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Snapshots loads a table's snapshot at a version (-1: latest); default
	// delta.LoadSnapshot. The daemon (and the stress test) may pass a cache
	// that reads only the commits it has not seen.
	Snapshots func(ctx context.Context, t *delta.Table, version int64) (*delta.Snapshot, error)
	// Progress, when set, receives the rewrite's progress: source files
	// and bytes read of the plan's total (phase "rewrite").
	Progress progress.Func
	// Executor runs the rewrite jobs (nil: Local, in this process).
	Executor Executor
	// CommitEveryJobs, when positive, commits a batch as soon as that many
	// finished jobs wait for their commit (partial progress: a failure
	// loses at most the jobs not yet committed). 0: no count trigger.
	CommitEveryJobs int
	// CommitInterval, when positive, commits the finished jobs waiting
	// once that long has passed since the run's start or its last commit.
	// 0: no time trigger. With neither trigger the run commits once, at
	// the end. Each batch is one OPTIMIZE commit against the run's read
	// snapshot, reconciled with everything that landed since (the run's
	// own earlier batches among them).
	CommitInterval time.Duration
	// AttemptStaleAfter is how long an intent record of a local attempt
	// may go unmodified before the run's sweep counts that attempt as dead
	// and deletes what it wrote and did not commit (default
	// attempt.DefaultStaleAfter, 1h; live runs rewrite theirs every
	// minute). Tests shorten it.
	AttemptStaleAfter time.Duration
}

// RunResult is what one compaction run did; `compactord compact --json`
// prints it.
type RunResult struct {
	// Table is the table URL.
	Table string `json:"table"`
	// ReadVersion is the snapshot version planned and written against.
	ReadVersion int64 `json:"readVersion"`
	// CommittedVersion is the version committed, -1 when none; with
	// several batches, the last one's.
	CommittedVersion int64 `json:"committedVersion"`
	// Commits counts the run's commits (batches), CommittedVersions lists
	// their versions in commit order.
	Commits           int     `json:"commits"`
	CommittedVersions []int64 `json:"committedVersions"`
	// JobsPlanned, JobsCommitted and JobsDropped count the plan's jobs.
	JobsPlanned   int `json:"jobsPlanned"`
	JobsCommitted int `json:"jobsCommitted"`
	JobsDropped   int `json:"jobsDropped"`
	// JobsFailed counts jobs whose rewrite failed (never committed).
	JobsFailed int `json:"jobsFailed"`
	// JobsAbandoned counts jobs rewritten but never committed because the
	// run stopped first: a batch commit failed, or the run was canceled.
	JobsAbandoned int `json:"jobsAbandoned"`
	// FilesRemoved and FilesAdded count the committed remove/add actions.
	// Like every count here they sum over the run's commits.
	FilesRemoved int `json:"filesRemoved"`
	FilesAdded   int `json:"filesAdded"`
	// BytesRead and BytesWritten are the committed jobs' source and output bytes.
	BytesRead    int64 `json:"bytesRead"`
	BytesWritten int64 `json:"bytesWritten"`
	// Reconciled lists the winners' DVs remapped onto committed outputs.
	Reconciled []commit.Reconciliation `json:"reconciled"`
	// Conflicts counts winning commits' effects by kind.
	Conflicts map[string]int `json:"conflicts"`
	// Dropped says which jobs were left out and why.
	Dropped []commit.DroppedJob `json:"dropped"`
	// Skipped are the plan's files left alone, by reason
	// (planner.CompactionPlan.Skipped): why a run did nothing, or not all.
	Skipped []planner.Skip `json:"skipped"`
	// ConsideredFiles counts the live files the plan looked at.
	ConsideredFiles int `json:"consideredFiles"`
	// SweptAttempts counts the dead attempts (killed runs) whose intent
	// records this run's start swept; SweptObjects the uncommitted objects
	// of theirs (and upload temp files) it deleted.
	SweptAttempts int64 `json:"sweptAttempts"`
	SweptObjects  int64 `json:"sweptObjects"`
}

func (o RunOptions) withDefaults() RunOptions {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Snapshots == nil {
		o.Snapshots = delta.LoadSnapshot
	}
	if o.Policy.Now.IsZero() {
		o.Policy.Now = o.Now()
	}
	o.Commit.Options = o.Commit.Options.Inherit(o.Now, o.Logger, o.EngineInfo)
	if o.Writer.Logger == nil {
		o.Writer.Logger = o.Logger
	}
	if o.Executor == nil {
		o.Executor = Local{}
	}
	return o
}

// loadWritable loads the snapshot at version (-1: latest) and checks that
// compactord may write the table.
func loadWritable(ctx context.Context, t *delta.Table, version int64, opts RunOptions) (*delta.Snapshot, error) {
	snap, err := opts.Snapshots(ctx, t, version)
	if err != nil {
		return nil, fmt.Errorf("load snapshot: %w", err) // delta's errors name the table
	}
	if err := delta.Writable(snap); err != nil {
		return nil, failure.With(failure.Halt, fmt.Errorf("table %s version %d: %w", t.URL, snap.Version, err))
	}
	return snap, nil
}

// PlanTable loads the latest snapshot of t and plans one compaction of it
// with the real planner (what `compactord plan` and the daemon both use).
func PlanTable(ctx context.Context, t *delta.Table, opts RunOptions) (*planner.CompactionPlan, *delta.Snapshot, error) {
	opts = opts.withDefaults()
	snap, err := loadWritable(ctx, t, -1, opts)
	if err != nil {
		return nil, nil, err
	}
	pl, err := planSnapshot(snap, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("plan %s: %w", t.URL, err)
	}
	return pl, snap, nil
}

// planSnapshot plans snap with the run's exclusions: the planner leaves
// them alone and says so (planner.SkipQuarantined).
func planSnapshot(snap *delta.Snapshot, opts RunOptions) (*planner.CompactionPlan, error) {
	p := opts.Policy
	if len(opts.Exclude) > 0 {
		p.Exclude = opts.Exclude
	}
	return planner.Plan(snap, p)
}

// Compact runs one compaction of t: snapshot, plan, rewrite, commit.
func Compact(ctx context.Context, t *delta.Table, opts RunOptions) (*RunResult, error) {
	opts = opts.withDefaults()
	snap, err := loadWritable(ctx, t, -1, opts)
	if err != nil {
		return nil, err
	}
	pl, err := planSnapshot(snap, opts)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", t.URL, err)
	}
	return runOnSnapshot(ctx, t, snap, pl, opts)
}

// RunPlan rewrites and commits a plan against its read version (loading that
// snapshot), reconciling whatever landed since. Jobs' sources are resolved
// by path in that snapshot, so a plan read back from JSON works.
func RunPlan(ctx context.Context, t *delta.Table, pl *planner.CompactionPlan, opts RunOptions) (*RunResult, error) {
	opts = opts.withDefaults()
	snap, err := loadWritable(ctx, t, pl.ReadVersion, opts)
	if err != nil {
		return nil, err
	}
	if snap.Version != pl.ReadVersion {
		return nil, fmt.Errorf("plan of %s is for version %d, loaded %d", t.URL, pl.ReadVersion, snap.Version)
	}
	return runOnSnapshot(ctx, t, snap, pl, opts)
}

// writerJobs resolves a plan's jobs against the snapshot.
func writerJobs(snap *delta.Snapshot, pl *planner.CompactionPlan) ([]*writer.Job, error) {
	live := make(map[string]*actions.Add, len(snap.Files))
	for _, f := range snap.Files {
		live[f.Path] = f
	}
	claimed := map[string]string{}
	jobs := make([]*writer.Job, 0, len(pl.Jobs))
	for i, pj := range pl.Jobs {
		paths := pj.SourcePaths
		if len(paths) == 0 {
			for _, s := range pj.Sources {
				paths = append(paths, s.Path)
			}
		}
		if len(paths) == 0 {
			return nil, fmt.Errorf("plan job %d (%s) has no sources", i, pj.ID)
		}
		id := pj.ID
		if id == "" {
			id = fmt.Sprintf("job-%d", i)
		}
		wj := &writer.Job{ID: id, PartitionValues: pj.PartitionValues, Tags: pj.Tags, ClusteringProvider: pj.ClusteringProvider, TargetFileSize: pj.TargetFileSize}
		if pj.Sort != nil {
			wj.Sort = &writer.SortSpec{Columns: pj.Sort.Columns, Curve: pj.Sort.Curve, Buckets: pj.Sort.Buckets}
		}
		for _, p := range paths {
			f, ok := live[p]
			if !ok {
				return nil, fmt.Errorf("plan job %s: source %s is not live at version %d", id, p, snap.Version)
			}
			if other, dup := claimed[p]; dup {
				return nil, fmt.Errorf("plan jobs %s and %s both read %s", other, id, p)
			}
			claimed[p] = id
			wj.Sources = append(wj.Sources, f)
		}
		jobs = append(jobs, wj)
	}
	return jobs, nil
}

// compactionJob hands a writer result to the commit: the sources as read,
// the outputs, and the composition record (runs, or the origin map of a
// sorted job).
func compactionJob(r *writer.Result) *commit.CompactionJob {
	cj := &commit.CompactionJob{
		ID:      r.Job.ID,
		Sources: r.Job.Sources,
		Runs:    r.Composition,
		Sorted:  r.Job.Sort != nil,
	}
	if r.Origins != nil {
		cj.Origins = r.Origins
	}
	for _, o := range r.Outputs {
		cj.Outputs = append(cj.Outputs, commit.JobOutput{Add: o.Add, Rows: o.NumRecords})
	}
	return cj
}
