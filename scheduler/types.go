package scheduler

import (
	"context"
	"time"

	"github.com/compactord/compactord/policies"
)

// RunFunc runs one compaction of a table. The scheduler calls it at most once
// at a time per table. On error, commit.Class(err) says what to do next; a
// Quarantine error names the bad files in RunReport.Quarantined or through
// an error implementing QuarantinedPaths.
type RunFunc func(ctx context.Context, req RunRequest) (RunReport, error)

// PollFunc reads a table's log entries newer than lastSeen (-1: none seen)
// and, when there are any, recomputes the backlog. An idle table should cost
// one LIST: return Changed=false and a nil Backlog.
type PollFunc func(ctx context.Context, p policies.Policy, lastSeen int64) (PollResult, error)

// QuarantinedPaths is implemented by errors that know which data files are
// corrupt.
type QuarantinedPaths interface {
	QuarantinedPaths() []string
}

// RunRequest is what the scheduler asks a RunFunc to do.
type RunRequest struct {
	// Table is the policy name.
	Table string
	// Policy is the table's effective policy.
	Policy policies.Policy
	// Exclude lists data file paths (as in add actions) quarantined by
	// earlier runs: the run must not read them.
	Exclude map[string]bool
	// Reason says what triggered the run (schedule, poll:small_files,
	// signal, api, retry).
	Reason string
}

// RunReport is what one run did. Zero values mean "nothing".
type RunReport struct {
	// Skipped is set when the run did not touch the table on purpose (for
	// example another replica holds the table's lease); SkipReason says why.
	Skipped    bool   `json:"skipped,omitempty"`
	SkipReason string `json:"skip_reason,omitempty"`
	// Committed is true when the run committed a version.
	Committed bool `json:"committed"`
	// Version is the committed version (valid when Committed).
	Version int64 `json:"version"`
	// ReadVersion is the snapshot version the run planned from.
	ReadVersion int64 `json:"read_version"`
	// JobsPlanned, JobsCommitted and JobsDropped count the plan's jobs.
	JobsPlanned   int `json:"jobs_planned"`
	JobsCommitted int `json:"jobs_committed"`
	JobsDropped   int `json:"jobs_dropped"`
	// FilesRemoved and BytesRemoved are the rewritten inputs.
	FilesRemoved int   `json:"files_removed"`
	BytesRemoved int64 `json:"bytes_removed"`
	// FilesAdded and BytesAdded are the outputs.
	FilesAdded int   `json:"files_added"`
	BytesAdded int64 `json:"bytes_added"`
	// Conflicts counts lost commit races by kind (e.g. "append",
	// "delete_dv", "metadata").
	Conflicts map[string]int `json:"conflicts,omitempty"`
	// Reconciliations counts sources whose concurrent deletion vectors were
	// remapped onto outputs.
	Reconciliations int `json:"reconciliations"`
	// ReconciledRows counts the concurrently deleted rows carried over.
	ReconciledRows int64 `json:"reconciled_rows"`
	// RowsExpired counts rows the table's retention delete removed.
	RowsExpired int64 `json:"rows_expired,omitempty"`
	// RetentionVersion is the version the retention delete committed (0: none).
	RetentionVersion int64 `json:"retention_version,omitempty"`
	// Quarantined lists data files found corrupt during this run.
	Quarantined []string `json:"quarantined,omitempty"`
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
	// SmallFiles and SmallBytes count compaction candidates (files below
	// the policy's small-file size and older than the settle window).
	SmallFiles int   `json:"small_files"`
	SmallBytes int64 `json:"small_bytes"`
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

// Evaluate returns the first trigger of p that the backlog crosses ("" when
// none). lastRun is the end of the last successful run (zero: never).
func Evaluate(p policies.Policy, b Backlog, lastRun, now time.Time) string {
	t := p.Triggers
	switch {
	case t.SmallFiles > 0 && b.SmallFiles >= t.SmallFiles:
		return "small_files"
	case t.DeletedRowsRatio > 0 && b.DeletedRowsRatio >= t.DeletedRowsRatio:
		return "deleted_rows_ratio"
	case t.UnclusteredBytes > 0 && b.UnclusteredBytes >= t.UnclusteredBytes:
		return "unclustered_bytes"
	case t.MaxTimeSinceLastRun > 0 && b.SmallFiles >= 2 && !lastRun.IsZero() && now.Sub(lastRun) >= t.MaxTimeSinceLastRun:
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
