package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/planner"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/retention"
	"github.com/compactord/compactord/scheduler"
	"github.com/compactord/compactord/scheduler/lease"
)

// Tables keeps one open delta.Table per URL for the daemon's polls and runs
// (mem:// tables live only as long as their handle, and object-store
// clients are worth reusing).
type Tables struct {
	mu   sync.Mutex
	open map[string]*delta.Table
}

// NewTables returns an empty cache.
func NewTables() *Tables { return &Tables{open: map[string]*delta.Table{}} }

// Get returns the open table of url, opening it on first use.
func (ts *Tables) Get(ctx context.Context, url string) (*delta.Table, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t, ok := ts.open[url]; ok {
		return t, nil
	}
	t, err := delta.OpenTable(ctx, url)
	if err != nil {
		return nil, err
	}
	ts.open[url] = t
	return t, nil
}

// Retain closes every table whose URL is not in ps.
func (ts *Tables) Retain(ps []policies.Policy) error {
	keep := map[string]bool{}
	for _, p := range ps {
		keep[p.URL] = true
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var errs []error
	for url, t := range ts.open {
		if !keep[url] {
			errs = append(errs, t.Close())
			delete(ts.open, url)
		}
	}
	return errors.Join(errs...)
}

// Close closes every table.
func (ts *Tables) Close() error { return ts.Retain(nil) }

// Backend runs and polls Delta tables for the daemon.
type Backend struct {
	// Tables caches open tables (required).
	Tables *Tables
	// Logger receives run logs (default null).
	Logger hclog.Logger
	// EngineInfo goes into commitInfo.engineInfo.
	EngineInfo string
	// Now is the clock for planning and commits (default time.Now).
	Now func() time.Time
	// Options is the template of every run's options; Policy, Exclude and
	// Logger are filled per run. Tests and the demo set commit hooks here.
	Options compaction.RunOptions
	// LeaseHolder, when set, makes every run hold the table's lease
	// (scheduler/lease) under this replica name: a table whose lease another
	// replica holds is skipped, and a run whose lease is lost is cancelled.
	// Empty: a single replica, no lease.
	LeaseHolder string
	// LeaseTTL is the lease duration (default 60s); it is renewed every
	// third of it while the run lasts.
	LeaseTTL time.Duration

	mu        sync.Mutex
	polled    map[string]*delta.Snapshot // by policy name + URL (one poller each)
	fullLoads atomic.Int64
}

// maxIncrementalCommits bounds how many commits a poll replays one by one
// before it prefers a full snapshot load (checkpoint + tail).
const maxIncrementalCommits = 100

// FullLoads counts polls that loaded a whole snapshot instead of replaying
// only the new commits.
func (b *Backend) FullLoads() int64 { return b.fullLoads.Load() }

func (b *Backend) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

func (b *Backend) logger() hclog.Logger {
	if b.Logger != nil {
		return b.Logger
	}
	return hclog.NewNullLogger()
}

func (b *Backend) options(p policies.Policy, exclude map[string]bool) compaction.RunOptions {
	o := b.Options
	now := b.now()
	o.Policy = p.PlannerPolicy(now)
	o.Exclude = exclude
	o.Logger = b.logger().Named(p.Name)
	if o.EngineInfo == "" {
		o.EngineInfo = b.EngineInfo
	}
	if o.Now == nil && b.Now != nil {
		o.Now = b.Now
	}
	if p.TargetFileSize > 0 && o.Writer.TargetFileSize == 0 {
		o.Writer.TargetFileSize = p.TargetFileSize
	}
	if o.Writer.Compression == "" {
		o.Writer.Compression = p.Compression
	}
	if o.Writer.MaxConcurrentJobs == 0 {
		o.Writer.MaxConcurrentJobs = p.Concurrency
	}
	return o
}

// Run is a RunFunc: one Compact of the table. When rewrite jobs failed, the
// sources of the plan are checked one by one; those that cannot be read are
// reported in RunReport.Quarantined and the error is classed Quarantine, so
// the next run skips them and the table keeps moving.
func (b *Backend) Run(ctx context.Context, req scheduler.RunRequest) (scheduler.RunReport, error) {
	t, err := b.Tables.Get(ctx, req.Policy.URL)
	if err != nil {
		return scheduler.RunReport{}, commit.WithClass(commit.Halt, fmt.Errorf("table %s: open %s: %w", req.Table, req.Policy.URL, err))
	}
	if b.LeaseHolder != "" {
		hl, skip, err := b.holdLease(ctx, t, req.Table)
		if err != nil || skip != "" {
			return scheduler.RunReport{Skipped: skip != "", SkipReason: skip}, err
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer func() { cancel(); hl.release(ctx, b.logger(), req.Table) }()
		go hl.renew(ctx, cancel, b.logger(), req.Table)
	}
	opts := b.options(req.Policy, req.Exclude)
	res, err := compaction.Compact(ctx, t, opts)
	var rep scheduler.RunReport
	if res != nil {
		rep = report(res)
		for _, r := range res.Reconciled {
			rep.ReconciledRows += r.RowsRemapped
		}
	}
	if err == nil && req.Policy.Retention != nil {
		err = b.expire(ctx, t, req, &rep)
		return rep, err
	}
	if err == nil || ctx.Err() != nil || commit.Class(err) == commit.Halt || res == nil || res.JobsFailed == 0 {
		return rep, err
	}
	bad, ferr := b.findUnreadable(ctx, t, opts)
	if ferr != nil {
		b.logger().Warn("could not look for corrupt files", "table", req.Table, "error", ferr)
	}
	if len(bad) == 0 {
		return rep, err
	}
	rep.Quarantined = bad
	return rep, commit.WithClass(commit.Quarantine, fmt.Errorf("table %s: quarantined %d unreadable data file(s) %v: %w", req.Table, len(bad), bad, err))
}

// expire runs the table's retention delete after its compaction, on the
// same schedule, and adds what it did to the run's report.
func (b *Backend) expire(ctx context.Context, t *delta.Table, req scheduler.RunRequest, rep *scheduler.RunReport) error {
	r := req.Policy.Retention
	var loc *time.Location
	if r.TimeZone != "" {
		l, err := time.LoadLocation(r.TimeZone)
		if err != nil {
			return fmt.Errorf("table %s: retention time_zone %q: %w", req.Table, r.TimeZone, err)
		}
		loc = l
	}
	res, err := retention.Expire(ctx, t, retention.Options{
		Column:              r.Column,
		OlderThan:           r.OlderThan,
		TimeZone:            loc,
		Now:                 b.now(),
		DisableDataSkipping: r.NoDataSkipping,
		Commit:              b.Options.Commit.Options,
		Writer:              b.options(req.Policy, req.Exclude).Writer,
		Logger:              b.logger().Named(req.Table).Named("retention"),
	})
	if res != nil {
		for k, n := range res.Conflicts {
			if rep.Conflicts == nil {
				rep.Conflicts = map[string]int{}
			}
			rep.Conflicts["retention_"+k] += n
		}
		if res.CommittedVersion >= 0 {
			rep.RowsExpired = res.RowsDeleted
			rep.RetentionVersion = res.CommittedVersion
			rep.Committed = true
			rep.Version = max(rep.Version, res.CommittedVersion)
		}
	}
	if err != nil {
		return fmt.Errorf("table %s: retention: %w", req.Table, err)
	}
	return nil
}

// holdLease takes the table's lease for one run. It returns the held
// lease, or a skip reason when another replica holds it.
func (b *Backend) holdLease(ctx context.Context, t *delta.Table, name string) (*heldLease, string, error) {
	ttl := b.LeaseTTL
	if ttl <= 0 {
		ttl = 60 * time.Second
	}
	l, err := lease.New(t, b.LeaseHolder, lease.Options{TTL: ttl, Now: b.Now})
	if err != nil {
		return nil, "", commit.WithClass(commit.Halt, fmt.Errorf("table %s: %w", name, err))
	}
	held, err := l.Acquire(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("table %s: %w", name, err)
	}
	if !held {
		return nil, "another replica holds the table's lease", nil
	}
	return &heldLease{l: l, ttl: ttl}, "", nil
}

// heldLease is a lease held for one run; mu serializes renewals and the
// release (a lease.Lease is not safe for concurrent use).
type heldLease struct {
	mu  sync.Mutex
	l   *lease.Lease
	ttl time.Duration
}

// renew renews the lease every third of its TTL until ctx ends; losing it
// cancels the run, which then abandons its attempt.
func (h *heldLease) renew(ctx context.Context, cancel context.CancelFunc, log hclog.Logger, name string) {
	tick := time.NewTicker(h.ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		h.mu.Lock()
		err := h.l.Renew(ctx)
		h.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			log.Error("table lease lost; abandoning the run", "table", name, "error", err)
			cancel()
			return
		}
	}
}

// release gives the lease up so another replica may take it at once (a
// renewal racing it finds the lease no longer held and writes nothing).
func (h *heldLease) release(ctx context.Context, log hclog.Logger, name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.l.Release(context.WithoutCancel(ctx)); err != nil {
		log.Warn("releasing the table lease", "table", name, "error", err)
	}
}

// findUnreadable plans again (same planner, same exclusions) and reads every
// source of the plan; files that fail to read are returned.
func (b *Backend) findUnreadable(ctx context.Context, t *delta.Table, opts compaction.RunOptions) ([]string, error) {
	pl, snap, err := compaction.PlanTable(ctx, t, opts)
	if err != nil {
		return nil, err
	}
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
				b.logger().Warn("data file unreadable; quarantining it", "table", t.URL, "path", p, "error", rerr)
				bad = append(bad, p)
			}
		}
	}
	sort.Strings(bad)
	return bad, nil
}

func readAll(ctx context.Context, t *delta.Table, snap *delta.Snapshot, add *delta.Add) (err error) {
	s, err := delta.OpenFileScan(ctx, t, snap, add, delta.ScanOptions{})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	rows := make([]parquet.Row, 256)
	idx := make([]int64, 256)
	for {
		_, rerr := s.ReadRows(rows, idx)
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// Poll is a PollFunc. When lastSeen >= 0 an idle table costs one existence
// check of the next commit; when the log moved, only the commits after
// lastSeen are read and applied to the files the poll already knows (a
// protocol or metadata change, a gap, or a long tail falls back to a full
// snapshot load). A table compactord cannot write is reported as a Halt
// error, so the scheduler never runs it.
func (b *Backend) Poll(ctx context.Context, p policies.Policy, lastSeen int64) (scheduler.PollResult, error) {
	t, err := b.Tables.Get(ctx, p.URL)
	if err != nil {
		return scheduler.PollResult{}, commit.WithClass(commit.Halt, fmt.Errorf("table %s: open %s: %w", p.Name, p.URL, err))
	}
	if lastSeen >= 0 {
		newer, err := delta.HasNewer(ctx, t, lastSeen)
		if err != nil {
			return scheduler.PollResult{}, err
		}
		if !newer {
			return scheduler.PollResult{Version: lastSeen}, nil
		}
		b.mu.Lock()
		prev := b.polled[pollKey(p)]
		b.mu.Unlock()
		if prev != nil && prev.Version == lastSeen {
			next, ok, err := delta.Advance(ctx, t, prev, maxIncrementalCommits)
			if err != nil {
				return scheduler.PollResult{}, fmt.Errorf("table %s: %w", p.Name, err)
			}
			if ok {
				b.remember(p, next)
				bl := ComputeBacklog(next, p, b.now())
				return scheduler.PollResult{Version: next.Version, Changed: true, Backlog: &bl}, nil
			}
		}
	}
	b.fullLoads.Add(1)
	snap, err := delta.LoadSnapshot(ctx, t, -1)
	if err != nil {
		return scheduler.PollResult{}, fmt.Errorf("table %s: %w", p.Name, err)
	}
	if err := delta.Writable(snap); err != nil {
		return scheduler.PollResult{Version: snap.Version}, commit.WithClass(commit.Halt,
			fmt.Errorf("table %s (%s) version %d cannot be compacted by this build: %w", p.Name, p.URL, snap.Version, err))
	}
	b.remember(p, snap)
	bl := ComputeBacklog(snap, p, b.now())
	return scheduler.PollResult{Version: snap.Version, Changed: snap.Version > lastSeen, Backlog: &bl}, nil
}

func pollKey(p policies.Policy) string { return p.Name + "\x00" + p.URL }

// remember keeps snap as the poll's view of p's table.
func (b *Backend) remember(p policies.Policy, snap *delta.Snapshot) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.polled == nil {
		b.polled = map[string]*delta.Snapshot{}
	}
	b.polled[pollKey(p)] = snap
}

// Plan is a dry run with the same planner and options a run would use.
func (b *Backend) Plan(ctx context.Context, p policies.Policy, exclude map[string]bool) (*planner.CompactionPlan, error) {
	t, err := b.Tables.Get(ctx, p.URL)
	if err != nil {
		return nil, fmt.Errorf("table %s: open %s: %w", p.Name, p.URL, err)
	}
	pl, _, err := compaction.PlanTable(ctx, t, b.options(p, exclude))
	return pl, err
}

// ComputeBacklog counts a snapshot's compaction candidates under p: files
// below min(min_file_size, target_file_size) and older than the settle
// window, the deleted-rows ratio, and, on clustered tables (by policy or by
// the table's own clustering columns), the bytes of files no clustering
// wrote (no clusteringProvider).
func ComputeBacklog(snap *delta.Snapshot, p policies.Policy, now time.Time) scheduler.Backlog {
	target := p.TargetFileSize
	if target <= 0 {
		target = planner.DefaultTargetFileSize
	}
	small := p.MinFileSize
	if small <= 0 || small > target {
		small = target
	}
	clustered := len(p.Clustering.Columns) > 0 || p.Strategy == policies.StrategyLightweight || p.Strategy == policies.StrategyZcube
	if !clustered {
		if cols, err := delta.ClusteringColumns(snap); err == nil && len(cols) > 0 {
			clustered = true
		}
	}
	settledBefore := now.Add(-p.SettleWindow).UnixMilli()
	var b scheduler.Backlog
	var rows, deleted int64
	for _, f := range snap.Files {
		b.Files++
		b.Bytes += f.Size
		if f.Size < small && (p.SettleWindow <= 0 || f.ModificationTime <= settledBefore) {
			b.SmallFiles++
			b.SmallBytes += f.Size
		}
		if clustered && f.ClusteringProvider == nil {
			b.UnclusteredBytes += f.Size
		}
		st := f.ParsedStats
		if st == nil && f.Stats != "" {
			st, _ = delta.ParseStats(f.Stats)
		}
		if st != nil && st.NumRecords != nil {
			rows += *st.NumRecords
			deleted += f.NumDeleted()
		}
	}
	if rows > 0 {
		b.DeletedRowsRatio = float64(deleted) / float64(rows)
	}
	return b
}

// report converts a compaction result to the scheduler's RunReport.
func report(r *compaction.RunResult) scheduler.RunReport {
	rep := scheduler.RunReport{
		Committed:       r.CommittedVersion >= 0,
		Version:         r.CommittedVersion,
		ReadVersion:     r.ReadVersion,
		JobsPlanned:     r.JobsPlanned,
		JobsCommitted:   r.JobsCommitted,
		JobsDropped:     r.JobsDropped,
		FilesRemoved:    r.FilesRemoved,
		BytesRemoved:    r.BytesRead,
		FilesAdded:      r.FilesAdded,
		BytesAdded:      r.BytesWritten,
		Conflicts:       r.Conflicts,
		Reconciliations: len(r.Reconciled),
	}
	return rep
}
