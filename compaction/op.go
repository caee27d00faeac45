package compaction

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/tableop"
	"github.com/compactord/compactord/writer"
)

// Name is the compaction operation's name in policies, reports and metrics.
const Name = "compaction"

// Counts that the compaction operation reports (tableop.Result.Counts).
const (
	CountJobsPlanned     = "jobs_planned"
	CountJobsCommitted   = "jobs_committed"
	CountJobsDropped     = "jobs_dropped"
	CountReconciliations = "reconciliations"
	CountReconciledRows  = "reconciled_rows"
)

// Factory returns the compaction operation's factory: every policy
// compacts. template is the base of every run's options (tests and the demo
// set commit hooks or a snapshot cache there); the policy fills in the
// planner policy and the writer settings, env the exclusions, logger and
// clock.
func Factory(template RunOptions) tableop.Factory {
	return tableop.Factory{Name: Name, New: func(p policies.Policy, env tableop.Env) (tableop.Op, bool, error) {
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
	if o.EngineInfo == "" {
		o.EngineInfo = env.EngineInfo
	}
	if o.Now == nil && env.Now != nil {
		o.Now = env.Now
	}
	o.Writer = tableop.WriterOptions(p, o.Writer)
	return o
}

// Op is one compaction of a table with fixed options.
type Op struct {
	Options RunOptions
}

var _ tableop.Op = (*Op)(nil)

// Name implements tableop.Op.
func (*Op) Name() string { return Name }

// Run implements tableop.Op: one Compact. When rewrite jobs failed, the
// sources of the plan are checked one by one; those that cannot be read are
// reported in Result.Quarantined and the error is classed Quarantine, so
// the next run skips them and the table keeps moving.
func (o *Op) Run(ctx context.Context, t *delta.Table) (tableop.Result, error) {
	res, err := Compact(ctx, t, o.Options)
	var out tableop.Result
	if res != nil {
		out = result(res)
	}
	if err == nil || ctx.Err() != nil || commit.Class(err) == commit.Halt || res == nil || res.JobsFailed == 0 {
		return out, err
	}
	bad, ferr := findUnreadable(ctx, t, o.Options)
	if ferr != nil {
		o.Options.withDefaults().Logger.Warn("could not look for corrupt files", "table", t.URL, "error", ferr)
	}
	if len(bad) == 0 {
		return out, err
	}
	out.Quarantined = bad
	return out, commit.WithClass(commit.Quarantine, fmt.Errorf("quarantined %d unreadable data file(s) %v: %w", len(bad), bad, err))
}

// result converts a compaction result to the operation's report.
func result(r *RunResult) tableop.Result {
	var rows int64
	for _, rc := range r.Reconciled {
		rows += rc.RowsRemapped
	}
	return tableop.Result{
		Committed:    r.CommittedVersion >= 0,
		Version:      r.CommittedVersion,
		ReadVersion:  r.ReadVersion,
		FilesRemoved: r.FilesRemoved,
		BytesRemoved: r.BytesRead,
		FilesAdded:   r.FilesAdded,
		BytesAdded:   r.BytesWritten,
		Conflicts:    r.Conflicts,
		Counts: map[string]int64{
			CountJobsPlanned:     int64(r.JobsPlanned),
			CountJobsCommitted:   int64(r.JobsCommitted),
			CountJobsDropped:     int64(r.JobsDropped),
			CountReconciliations: int64(len(r.Reconciled)),
			CountReconciledRows:  rows,
		},
	}
}

// findUnreadable plans again (same planner, same exclusions) and reads every
// source of the plan; files that fail to read are returned.
func findUnreadable(ctx context.Context, t *delta.Table, opts RunOptions) ([]string, error) {
	pl, snap, err := PlanTable(ctx, t, opts)
	if err != nil {
		return nil, err
	}
	log := opts.withDefaults().Logger
	byPath := map[string]*delta.Add{}
	for _, f := range snap.Files {
		byPath[f.Path] = f
	}
	var bad []string
	for _, j := range pl.Jobs {
		paths := j.SourcePaths
		if len(paths) == 0 {
			for _, s := range j.Sources {
				paths = append(paths, s.Path)
			}
		}
		for _, p := range paths {
			add, ok := byPath[p]
			if !ok {
				continue
			}
			if rerr := readAll(ctx, t, snap, add); rerr != nil {
				if ctx.Err() != nil {
					return bad, ctx.Err()
				}
				log.Warn("data file unreadable; quarantining it", "table", t.URL, "path", p, "error", rerr)
				bad = append(bad, p)
			}
		}
	}
	sort.Strings(bad)
	return bad, nil
}

// readAll reads every live row of add, and checks what the rewrite relies
// on: the statistics' numRecords equals the footer's row count (deletion
// vectors index physical rows), and the rows read equal numRecords minus
// the DV's cardinality. A file that fails either is as unusable as a
// truncated one.
func readAll(ctx context.Context, t *delta.Table, snap *delta.Snapshot, add *delta.Add) (err error) {
	s, err := delta.OpenFileScan(ctx, t, snap, add, delta.ScanOptions{})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	physical := s.NumPhysicalRows()
	if n, ok, nerr := add.NumRecords(); nerr != nil {
		return fmt.Errorf("data file %s: %w", add.Path, nerr)
	} else if ok && n != physical {
		return fmt.Errorf("data file %s: %w: stats numRecords %d, parquet footer %d rows", add.Path, writer.ErrStatsContradictFooter, n, physical)
	}
	rows := make([]parquet.Row, 256)
	idx := make([]int64, 256)
	var live int64
	for {
		n, rerr := s.ReadRows(rows, idx)
		live += int64(n)
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	if want := physical - add.NumDeleted(); live != want {
		return fmt.Errorf("data file %s: %w: read %d live rows, want %d", add.Path, writer.ErrLiveRowMismatch, live, want)
	}
	return nil
}
