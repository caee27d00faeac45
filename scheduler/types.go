package scheduler

import (
	"context"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/compactord/compactord/internal/progress"
)

// RunFunc runs one operation (RunRequest.Op) of a table. The scheduler
// calls it at most once at a time per table, for each of the table's
// operations in order (Spec.Ops). On error, failure.Of(err) says what to
// do next; a Quarantine error names the bad files in RunReport.Quarantined
// or through the failure.CorruptFileErrors inside the error.
type RunFunc[P any] func(ctx context.Context, req RunRequest[P]) (RunReport, error)

// PollFunc reads a table's log entries newer than lastSeen (-1: none seen)
// and, when there are any, recomputes the backlog. An idle table should cost
// one existence check: return Changed=false and a nil Backlog.
type PollFunc[P any] func(ctx context.Context, p P, lastSeen int64) (PollResult, error)

// Spec is what the scheduler knows of a table's policy: when the table may
// run, what fires a run, and which operations a run performs. The rest of
// the policy (type P) is opaque to the scheduler.
type Spec struct {
	// Name identifies the table; unique in a policy set.
	Name string
	// URL and Strategy are shown in /status.
	URL      string
	Strategy string
	// Enabled false keeps the table polled and visible but never run.
	Enabled bool
	// Schedule is the table's cron schedule (nil: triggers only).
	Schedule cron.Schedule
	// Triggers are the backlog thresholds that fire a run from a poll.
	Triggers Triggers
	// Ops are the operations of a run, in order (for example compaction,
	// then retention, then maintenance operations). Nil or empty: one call
	// per run with an empty RunRequest.Op.
	Ops []string
	// Quota is the table's share of worker time over Config.QuotaWindow,
	// in workers (0.5: half a worker-hour per hour); 0 means Config.Quota.
	// Past it the table waits while tables under quota wait (fleet.go).
	Quota float64
	// Group names the table's quota group (Config.GroupQuotas); "" is none.
	Group string
}

// Triggers are the thresholds a poll checks after reading new log entries.
// A zero threshold is off.
type Triggers struct {
	// SmallFiles fires when at least this many files are compaction
	// candidates (Backlog.MergeableFiles).
	SmallFiles int `json:"small_files"`
	// DeletedRowsRatio fires when the table's deleted rows exceed this share.
	DeletedRowsRatio float64 `json:"deleted_rows_ratio"`
	// UnclusteredBytes fires when this many bytes are not yet clustered.
	UnclusteredBytes int64 `json:"unclustered_bytes"`
	// MaxTimeSinceLastRun fires when the last run is older than this.
	MaxTimeSinceLastRun time.Duration `json:"max_time_since_last_run"`
}

// RunRequest is what the scheduler asks a RunFunc to do.
type RunRequest[P any] struct {
	// Table is the table's name (Spec.Name).
	Table string
	// Op is the operation to run (one of Spec.Ops).
	Op string
	// Policy is the table's policy, as given to Apply.
	Policy P
	// Exclude lists data file paths (as in add actions) quarantined by
	// earlier runs: the run must not read them.
	Exclude map[string]bool
	// Reason says what triggered the run (schedule, poll:small_files,
	// signal, api, retry).
	Reason string
	// Progress receives the operation's progress: /status shows the
	// latest while the operation runs, and the scheduler logs it every
	// Config.ProgressLogInterval.
	Progress progress.Func
}

// RunReport is what one operation did, or (in RunRecord.Report) the sum
// of what a run's operations did. Zero values mean "nothing".
type RunReport struct {
	// Skipped is set when the run did not touch the table on purpose (for
	// example another replica holds the table's lease); SkipReason says why.
	Skipped    bool   `json:"skipped,omitempty"`
	SkipReason string `json:"skip_reason,omitempty"`
	// Committed is true when the operation committed a version.
	Committed bool `json:"committed"`
	// Version is the latest version committed (valid when Committed).
	Version int64 `json:"version"`
	// ReadVersion is the snapshot version the operation read.
	ReadVersion int64 `json:"read_version"`
	// FilesRemoved and BytesRemoved are the data files the commit removed.
	FilesRemoved int   `json:"files_removed"`
	BytesRemoved int64 `json:"bytes_removed"`
	// FilesAdded and BytesAdded are the data files it added.
	FilesAdded int   `json:"files_added"`
	BytesAdded int64 `json:"bytes_added"`
	// Conflicts counts concurrent commits met by kind (e.g. "append",
	// "delete_dv", "metadata"; an operation may prefix its kinds).
	Conflicts map[string]int `json:"conflicts,omitempty"`
	// Counts are the operation's own numbers by name (see the operation's
	// package, e.g. "jobs_planned", "reconciliations", "rows_expired");
	// the scheduler sums them without knowing what they mean.
	Counts map[string]int64 `json:"counts,omitempty"`
	// Quarantined lists data files found corrupt during this run.
	Quarantined []string `json:"quarantined,omitempty"`
	// Missing lists data files this run found missing from the store
	// while the table's newest snapshot still names them
	// (failure.MissingFileError, checked against a snapshot read after the
	// failure): after Config.MissingRuns such runs in a row they are
	// quarantined.
	Missing []string `json:"missing,omitempty"`
	// Held are the files the operation left alone on purpose, by reason:
	// why a run did nothing (result noop), or not all it could.
	Held []Hold `json:"held_back,omitempty"`
	// Done says, one line each, what the operation did that no commit
	// records (tableop.Result.Done): a report with Done and no commit is
	// the result "done", not "noop".
	Done []string `json:"done,omitempty"`
	// Polled is the table as the operation left it, when it committed:
	// the version and the backlog recomputed from the snapshot after its
	// commits (the RunFunc polls the table again, as PollFunc does, so
	// that /status and the triggers do not keep the backlog of before the
	// run until the next poll). Nil when nothing was committed or the
	// table could not be read again.
	Polled *PollResult `json:"-"`
}

// resultOf is the result of a report that came with no error.
func resultOf(r RunReport) string {
	switch {
	case r.Skipped:
		return ResultSkipped
	case r.Committed:
		return ResultCommitted
	case len(r.Done) > 0:
		return ResultDone
	}
	return ResultNoop
}

// whyOf joins the reasons of holds into one line ("" when none).
func whyOf(hs []Hold) string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = h.Reason
	}
	return strings.Join(parts, "; ")
}

// Hold is one reason files were left alone, as the operation gave it (for
// compaction, one of the planner's skip groups). The scheduler shows and
// logs holds without knowing their codes.
type Hold struct {
	// Code names the reason (e.g. "settling", "single_file_bin",
	// "byte_cap", "quarantined", "large_enough").
	Code string `json:"code"`
	// Reason says it in one line, counts and policy values included.
	Reason string `json:"reason"`
	// Files and Bytes count the files held back.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// EligibleAt is when the first of them stops being held (the end of
	// its settle window); nil when time alone does not release them.
	EligibleAt *time.Time `json:"eligible_at,omitempty"`
}

// add sums o into r (the report of a run of several operations).
func (r *RunReport) add(o RunReport) {
	if o.Skipped {
		r.Skipped, r.SkipReason = true, o.SkipReason
	}
	if o.Committed {
		r.Committed = true
		r.Version = max(r.Version, o.Version)
	}
	if r.ReadVersion == 0 {
		r.ReadVersion = o.ReadVersion
	}
	r.FilesRemoved += o.FilesRemoved
	r.BytesRemoved += o.BytesRemoved
	r.FilesAdded += o.FilesAdded
	r.BytesAdded += o.BytesAdded
	for k, v := range o.Conflicts {
		if r.Conflicts == nil {
			r.Conflicts = map[string]int{}
		}
		r.Conflicts[k] += v
	}
	for k, v := range o.Counts {
		if r.Counts == nil {
			r.Counts = map[string]int64{}
		}
		r.Counts[k] += v
	}
	r.Quarantined = append(r.Quarantined, o.Quarantined...)
	r.Missing = append(r.Missing, o.Missing...)
	r.Held = append(r.Held, o.Held...)
	r.Done = append(r.Done, o.Done...)
	if o.Polled != nil {
		r.Polled = o.Polled // the last operation's view is the newest
	}
}

// PollResult is what one poll learned.
type PollResult struct {
	// Version is the latest table version.
	Version int64
	// Changed is true when Version is newer than the lastSeen passed in.
	Changed bool
	// Backlog is the recomputed backlog (nil when unchanged).
	Backlog *Backlog
}

// Backlog is the work waiting in a table.
type Backlog struct {
	// SmallFiles and SmallBytes count every small file of the table
	// (planner.BacklogOf: below min(min_file_size, target file size)).
	SmallFiles int   `json:"small_files"`
	SmallBytes int64 `json:"small_bytes"`
	// MergeableFiles and MergeableBytes count the small files a
	// compaction run would merge now (past the settle window, sharing a
	// bin with another file): what the small_files trigger counts.
	MergeableFiles int   `json:"mergeable_files"`
	MergeableBytes int64 `json:"mergeable_bytes"`
	// Held groups the small files a run would leave alone, by reason
	// (settle window, alone in their bin, ...).
	Held []Hold `json:"held_back,omitempty"`
	// QuarantinedFiles and QuarantinedBytes count the live files on the
	// table's quarantine list: none of them is in the counts above but
	// Files and Bytes (a quarantined file is no backlog: no run merges it).
	QuarantinedFiles int   `json:"quarantined_files,omitempty"`
	QuarantinedBytes int64 `json:"quarantined_bytes,omitempty"`
	// Files and Bytes count all live files.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// DeletedRowsRatio is DV-deleted rows over physical rows.
	DeletedRowsRatio float64 `json:"deleted_rows_ratio"`
	// UnclusteredBytes counts bytes not yet clustered (0 when the table is
	// not clustered).
	UnclusteredBytes int64 `json:"unclustered_bytes"`
}

// Trigger reasons.
const (
	ReasonSchedule = "schedule"
	ReasonSignal   = "signal"
	ReasonAPI      = "api"
	ReasonRetry    = "retry"
)

// Evaluate returns the first trigger of t that the backlog crosses ("" when
// none). lastRun is the end of the last successful run (zero: never).
func Evaluate(t Triggers, b Backlog, lastRun, now time.Time) string {
	switch {
	case t.SmallFiles > 0 && b.MergeableFiles >= t.SmallFiles:
		return "small_files"
	case t.DeletedRowsRatio > 0 && b.DeletedRowsRatio >= t.DeletedRowsRatio:
		return "deleted_rows_ratio"
	case t.UnclusteredBytes > 0 && b.UnclusteredBytes >= t.UnclusteredBytes:
		return "unclustered_bytes"
	case t.MaxTimeSinceLastRun > 0 && b.MergeableFiles >= 2 && !lastRun.IsZero() && now.Sub(lastRun) >= t.MaxTimeSinceLastRun:
		return "max_time_since_last_run"
	}
	return ""
}

// Backoff returns the wait after the n-th consecutive failure (n >= 1):
// base*2^(n-1) capped at max, with "equal jitter" (half fixed, half random)
// so that tables failing together do not retry together. rnd returns [0,1).
func Backoff(n int, base, max time.Duration, rnd func() float64) time.Duration {
	d := base
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	half := d / 2
	return half + time.Duration(rnd()*float64(d-half))
}
