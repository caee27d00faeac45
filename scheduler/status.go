package scheduler

import (
	"time"

	"github.com/compactord/compactord/internal/progress"
)

// Table states reported by Status.
const (
	StateIdle    = "idle"
	StateQueued  = "queued"
	StateRunning = "running"
	StateBackoff = "backoff"
	// StateWaiting: the table cannot be read (its path does not exist
	// yet, no _delta_log, access refused); it is polled again with backoff
	// (TableStatus.Waiting says why and when).
	StateWaiting  = "waiting"
	StateHalted   = "halted"
	StateDisabled = "disabled"
)

// Run results (the "result" label of compactord_runs_total).
const (
	ResultCommitted = "committed"
	// ResultPartial is a run that committed some of its work and failed
	// with a retry-class error for the rest (a job that could not be
	// rewritten, an operation after a committed one).
	ResultPartial = "partial"
	ResultNoop    = "noop"
	// ResultDone is an operation, or a run, that committed nothing but
	// did work all the same (RunReport.Done: a checkpoint written, log
	// files or temp leftovers deleted).
	ResultDone       = "done"
	ResultRetry      = "retry"
	ResultQuarantine = "quarantine"
	ResultHalt       = "halt"
	ResultCancelled  = "cancelled"
	ResultSkipped    = "skipped"
)

// Results lists every run result, in exposition order.
var Results = []string{ResultCommitted, ResultPartial, ResultDone, ResultNoop, ResultSkipped, ResultRetry, ResultQuarantine, ResultHalt, ResultCancelled}

// DurationBuckets are the upper bounds (seconds) of the run duration histogram.
var DurationBuckets = []float64{0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600}

// RunRecord describes one finished run.
type RunRecord struct {
	Reason   string    `json:"reason"`
	Result   string    `json:"result"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Duration float64   `json:"duration_seconds"`
	Error    string    `json:"error,omitempty"`
	// Report sums the reports of Ops.
	Report RunReport `json:"report"`
	// Ops are the run's operations in the order they ran; an operation
	// after a failed or skipped one does not run.
	Ops []OpRecord `json:"ops"`
}

// OpRecord is what one operation of a run did.
type OpRecord struct {
	Op     string    `json:"op"`
	Result string    `json:"result"`
	Error  string    `json:"error,omitempty"`
	Report RunReport `json:"report"`
}

// Counters are a table's cumulative counters since its policy was loaded.
type Counters struct {
	Runs           map[string]int64 `json:"runs"`
	FilesRewritten int64            `json:"files_rewritten"`
	BytesRewritten int64            `json:"bytes_rewritten"`
	FilesWritten   int64            `json:"files_written"`
	BytesWritten   int64            `json:"bytes_written"`
	Conflicts      map[string]int64 `json:"conflicts"`
	// Counts sums the operations' own counts (RunReport.Counts).
	Counts     map[string]int64 `json:"counts"`
	Polls      int64            `json:"polls"`
	PollErrors int64            `json:"poll_errors"`
	Coalesced  int64            `json:"coalesced_triggers"`
	Deferred   int64            `json:"deferred_triggers"`
	// RequestedPolls counts the polls PollNow asked for (change events);
	// each is also in Polls.
	RequestedPolls int64 `json:"requested_polls"`
	// DurationBuckets[i] counts runs that took at most DurationBuckets[i]
	// seconds (cumulative, as Prometheus wants); DurationCount and
	// DurationSum cover every run.
	DurationBuckets []int64 `json:"-"`
	DurationCount   int64   `json:"-"`
	DurationSum     float64 `json:"-"`
}

// A table's Counters keep their maps and buckets nil until a run fills
// them (an idle table keeps none); clone gives Status the full shape.

// countRun counts one run of result r.
func (c *Counters) countRun(r string) {
	if c.Runs == nil {
		c.Runs = map[string]int64{}
	}
	c.Runs[r]++
}

func (c *Counters) addReport(r RunReport, d time.Duration) {
	if c.Conflicts == nil && len(r.Conflicts) > 0 {
		c.Conflicts = map[string]int64{}
	}
	if c.Counts == nil && len(r.Counts) > 0 {
		c.Counts = map[string]int64{}
	}
	if c.DurationBuckets == nil {
		c.DurationBuckets = make([]int64, len(DurationBuckets))
	}
	c.FilesRewritten += int64(r.FilesRemoved)
	c.BytesRewritten += r.BytesRemoved
	c.FilesWritten += int64(r.FilesAdded)
	c.BytesWritten += r.BytesAdded
	for k, v := range r.Conflicts {
		c.Conflicts[k] += int64(v)
	}
	for k, v := range r.Counts {
		c.Counts[k] += v
	}
	sec := d.Seconds()
	for i, b := range DurationBuckets {
		if sec <= b {
			c.DurationBuckets[i]++
		}
	}
	c.DurationCount++
	c.DurationSum += sec
}

func (c *Counters) clone() Counters {
	out := *c
	out.Runs = make(map[string]int64, len(Results))
	for _, r := range Results {
		out.Runs[r] = 0
	}
	for k, v := range c.Runs {
		out.Runs[k] = v
	}
	out.Conflicts = make(map[string]int64, len(c.Conflicts))
	for k, v := range c.Conflicts {
		out.Conflicts[k] = v
	}
	out.Counts = make(map[string]int64, len(c.Counts))
	for k, v := range c.Counts {
		out.Counts[k] = v
	}
	out.DurationBuckets = make([]int64, len(DurationBuckets))
	copy(out.DurationBuckets, c.DurationBuckets)
	return out
}

// TableStatus is one table's state as /status shows it.
type TableStatus struct {
	Name       string `json:"name"`
	URL        string `json:"url"`
	Strategy   string `json:"strategy"`
	Enabled    bool   `json:"enabled"`
	State      string `json:"state"`
	Halted     bool   `json:"halted"`
	HaltReason string `json:"halt_reason,omitempty"`
	// HaltedSince is when the table halted; HaltAdvice says what clears it.
	HaltedSince *time.Time `json:"halted_since,omitempty"`
	HaltAdvice  string     `json:"halt_advice,omitempty"`
	// Waiting says why a table in StateWaiting cannot be read and when it
	// is tried again.
	Waiting     *Waiting   `json:"waiting,omitempty"`
	LastVersion int64      `json:"last_seen_version"`
	LastRun     *RunRecord `json:"last_run,omitempty"`
	LastSuccess *time.Time `json:"last_success,omitempty"`
	NextRun     *time.Time `json:"next_run,omitempty"`
	NextPoll    time.Time  `json:"next_poll"`
	Failures    int        `json:"consecutive_failures"`
	Backlog     *Backlog   `json:"backlog,omitempty"`
	LastError   string     `json:"last_error,omitempty"`
	PollError   string     `json:"poll_error,omitempty"`
	// Quarantined lists the paths of the quarantined files, sorted;
	// Quarantine says the same with each file's reason and error.
	Quarantined []string      `json:"quarantined,omitempty"`
	Quarantine  []Quarantined `json:"quarantine,omitempty"`
	Counters    Counters      `json:"counters"`
	// Progress is the running operation's progress (files and bytes done
	// of their totals, when it started), when it reports any.
	Progress *progress.Progress `json:"progress,omitempty"`
	// Fleet is the table's quota use and, while it waits for a worker,
	// its place in the fleet queue, its score and why it waits.
	Fleet FleetStatus `json:"fleet"`
}

func (t *table[P]) status() TableStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := TableStatus{
		Name:        t.spec.Name,
		URL:         t.spec.URL,
		Strategy:    t.spec.Strategy,
		Enabled:     t.spec.Enabled,
		State:       t.state,
		Halted:      t.halted,
		HaltReason:  t.haltReason,
		LastVersion: t.lastSeen,
		NextPoll:    t.nextPoll,
		Failures:    t.failures,
		LastError:   t.lastError,
		PollError:   t.pollError,
		Counters:    t.counters.clone(),
	}
	if t.halted {
		st.HaltAdvice = HaltAdvice(t.spec.Name)
		if !t.haltSince.IsZero() {
			hs := t.haltSince
			st.HaltedSince = &hs
		}
	}
	if t.waiting != nil {
		w := *t.waiting
		st.Waiting = &w
	}
	if t.lastRun != nil {
		r := *t.lastRun
		st.LastRun = &r
	}
	if !t.lastSuccess.IsZero() {
		ls := t.lastSuccess
		st.LastSuccess = &ls
	}
	if t.backlog != nil {
		b := *t.backlog
		st.Backlog = &b
	}
	if t.progress != nil && t.state == StateRunning {
		p := *t.progress
		st.Progress = &p
	}
	if !t.halted && t.spec.Enabled {
		var next time.Time
		if !t.retryAt.IsZero() {
			next = t.retryAt
		}
		if t.spec.Schedule != nil && (next.IsZero() || t.nextCron.Before(next)) {
			next = t.nextCron
		}
		if !next.IsZero() {
			st.NextRun = &next
		}
	}
	st.Quarantine = t.quarantineList()
	for _, q := range st.Quarantine {
		st.Quarantined = append(st.Quarantined, q.Path)
	}
	return st
}
