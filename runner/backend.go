package runner

import (
	"context"
	"errors"
	"fmt"
	"github.com/compactord/compactord/autocluster"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/checkpoint"
	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/redact"
	"github.com/compactord/compactord/logcleanup"
	"github.com/compactord/compactord/objstore"
	"github.com/compactord/compactord/planner"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/retention"
	"github.com/compactord/compactord/scheduler"
	"github.com/compactord/compactord/scheduler/lease"
	"github.com/compactord/compactord/statsbackfill"
	"github.com/compactord/compactord/tableop"
	"github.com/compactord/compactord/vacuum"
)

// Tables keeps one open delta.Table per URL for the daemon's polls and runs
// (mem:// tables live only as long as their handle, and object-store
// clients are worth reusing).
type Tables struct {
	opts delta.OpenOptions

	mu   sync.Mutex
	open map[string]*delta.Table
}

// NewTables returns an empty cache opening tables with delta's defaults.
func NewTables() *Tables { return NewTablesWith(delta.OpenOptions{}) }

// NewTablesWith returns an empty cache opening tables with opts (the
// object-store deadlines and retries).
func NewTablesWith(opts delta.OpenOptions) *Tables {
	return &Tables{opts: opts, open: map[string]*delta.Table{}}
}

// Get returns the open table of url, opening it on first use.
func (ts *Tables) Get(ctx context.Context, url string) (*delta.Table, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t, ok := ts.open[url]; ok {
		return t, nil
	}
	t, err := delta.OpenTableWith(ctx, url, ts.opts)
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
	// Options is the template of every compaction's options; Policy,
	// Exclude and Logger are filled per run. Tests and the demo set commit
	// hooks here (retention commits with Options.Commit.Options).
	Options compaction.RunOptions
	// Ops are the table operations a run performs, in order; nil means
	// DefaultOps(Options).
	Ops []Factory
	// LeaseHolder, when set, makes every run hold the table's lease
	// (scheduler/lease) under this replica name: a table whose lease another
	// replica holds is skipped, and a run whose lease is lost is cancelled.
	// Empty: a single replica, no lease.
	LeaseHolder string
	// LeaseTTL is the lease duration (default 60s); it is renewed every
	// third of it while the run lasts.
	LeaseTTL time.Duration
	// RetryBudget is how many retries of transient object-store failures
	// one run, or one poll, may spend (default objstore.DefaultRunBudget).
	RetryBudget int
	// Launchers are the fanout launchers of a policy's executor block by
	// kind; nil means DefaultLaunchers() (process). A kind missing here
	// fails the compaction of a table that asks for it, naming it.
	Launchers map[string]LauncherFunc

	mu          sync.Mutex
	polled      map[string]polledTable     // by policy name + URL (one poller each)
	quarantined map[string]map[string]bool // the lists QuarantineStore last loaded or saved, by the same key
	// shared gives the polled snapshots of every table one parsed schema
	// and set of properties per distinct one (made on first use).
	shared    *delta.Shared
	opLists   map[string][]string // sharedOps' lists, by their names joined
	fullLoads atomic.Int64
}

// polledTable is the poll's view of a table: its slim snapshot. (The
// table handle remembers when a version was last found the newest, which
// makes an idle poll one request: delta.HasNewer.)
type polledTable struct {
	snap *delta.Snapshot
}

// maxIncrementalCommits bounds how many commits a poll replays one by one
// before it prefers a full snapshot load (checkpoint + tail).
const maxIncrementalCommits = 100

// FullLoads counts polls that loaded a whole snapshot instead of replaying
// only the new commits.
func (b *Backend) FullLoads() int64 { return b.fullLoads.Load() }

// withBudget gives one run or poll its own retry budget.
func (b *Backend) withBudget(ctx context.Context) context.Context {
	n := b.RetryBudget
	if n <= 0 {
		n = objstore.DefaultRunBudget
	}
	return objstore.WithBudget(ctx, objstore.NewBudget(n))
}

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

// DefaultOps are the operations of a run: compaction, then retention (for
// policies with a retention block), then the statistics backfill (with a
// stats_backfill block), then the checkpoint pass (our commits on
// multiples of delta.checkpointInterval, and the catch-up of other
// writers'), then the expired-log cleanup, then vacuum (a vacuum block's
// lite or full vacuum once per interval, else the cheap sweep of temp
// leftovers), with o as the compaction template; retention takes its
// commit and writer options and its AttemptStaleAfter.
func DefaultOps(o compaction.RunOptions) []Factory {
	return []Factory{
		// Before compaction: a key it sets is the one compaction clusters on.
		autocluster.Factory(o.Commit.Options),
		compaction.Factory(o),
		retention.Factory(o.Commit.Options, o.Writer, o.AttemptStaleAfter),
		statsbackfill.Factory(o.Commit.Options),
		checkpoint.Factory(),
		logcleanup.Factory(),
		vacuum.Factory(o.Commit.Options),
	}
}

// Factory is a table operation's factory as the daemon runs it: over
// policies.Policy and *delta.Table (compaction.Factory and its siblings).
type Factory = tableop.Factory[policies.Policy, *delta.Table]

func (b *Backend) factories() []Factory {
	if b.Ops != nil {
		return b.Ops
	}
	launchers := b.Launchers
	if launchers == nil {
		launchers = DefaultLaunchers()
	}
	return withExecutor(DefaultOps(b.Options), launchers)
}

// withExecutor wraps the factory of ops named compaction.Name, wherever it
// stands in their order, with WithExecutor; ops without one are returned
// as they are.
func withExecutor(ops []Factory, launchers map[string]LauncherFunc) []Factory {
	if _, i := tableop.Named(ops, compaction.Name); i >= 0 {
		ops[i] = WithExecutor(ops[i], launchers)
	}
	return ops
}

func (b *Backend) env(p policies.Policy, exclude map[string]bool) tableop.Env {
	return tableop.Env{Exclude: exclude, Now: b.Now, Logger: b.logger().Named(p.Name), EngineInfo: b.EngineInfo}
}

// OpsFor is the scheduler's OpsFunc: the names of the operations p's runs
// perform, in order. An operation whose settings are invalid is listed, so
// that its run reports the error.
func (b *Backend) OpsFor(p policies.Policy) []string {
	var names []string
	for _, f := range b.factories() {
		if _, ok, err := f.New(p, b.env(p, nil)); ok || err != nil {
			names = append(names, f.Name)
		}
	}
	return names
}

// Spec is the scheduler's view of p, with the operations its runs perform
// (OpsFor).
func (b *Backend) Spec(p policies.Policy) (scheduler.Spec, error) {
	return SpecOf(p, b.sharedOps(b.OpsFor(p)))
}

// sharedOps returns one slice of each list of operation names, so that
// the specs of ten thousand tables of one policy hold one list. The
// scheduler only reads a spec's operations; the slice is cut to its length,
// so an append copies it.
func (b *Backend) sharedOps(names []string) []string {
	key := strings.Join(names, "\x00")
	b.mu.Lock()
	defer b.mu.Unlock()
	if held, ok := b.opLists[key]; ok {
		return held
	}
	if b.opLists == nil {
		b.opLists = map[string][]string{}
	}
	names = slices.Clip(names)
	b.opLists[key] = names
	return names
}

// SpecOf is the scheduler's view of p: its name, schedule and triggers, and
// ops as the operations of its runs.
func SpecOf(p policies.Policy, ops []string) (scheduler.Spec, error) {
	sp := scheduler.Spec{
		Name:     p.Name,
		URL:      redact.URL(p.URL),
		Strategy: string(p.Strategy),
		Enabled:  p.Enabled,
		Triggers: scheduler.Triggers(p.Triggers),
		Ops:      ops,
		Quota:    p.Fleet.Quota,
		Group:    p.Fleet.Group,
	}
	if p.Schedule != "" {
		sch, err := policies.ParseSchedule(p.Schedule)
		if err != nil {
			return sp, err
		}
		sp.Schedule = sch
	}
	return sp, nil
}

// SamePolicy reports whether a and b are the same policy of a table, wherever
// they were declared (the scheduler keeps such a table running on reload).
func SamePolicy(a, b policies.Policy) bool {
	a.Source, b.Source = "", ""
	return reflect.DeepEqual(a, b)
}

// Run is a RunFunc: it runs the operation req.Op of the table, holding the
// table's lease while it runs when LeaseHolder is set. Its error, which
// /status and the log show, names table URLs with their credentials
// redacted (package redact); so do Poll's and Plan's.
func (b *Backend) Run(ctx context.Context, req scheduler.RunRequest[policies.Policy]) (scheduler.RunReport, error) {
	rep, err := b.run(ctx, req)
	return rep, redact.Error(err)
}

func (b *Backend) run(ctx context.Context, req scheduler.RunRequest[policies.Policy]) (scheduler.RunReport, error) {
	ctx = b.withBudget(ctx)
	var op tableop.Op[*delta.Table]
	for _, f := range b.factories() {
		if f.Name != req.Op {
			continue
		}
		env := b.env(req.Policy, req.Exclude)
		env.Progress = req.Progress
		o, ok, err := f.New(req.Policy, env)
		if err != nil {
			return scheduler.RunReport{}, failure.With(failure.Halt, fmt.Errorf("table %s: %s: %w", req.Table, req.Op, err))
		}
		if ok {
			op = o
		}
	}
	if op == nil {
		return scheduler.RunReport{}, failure.With(failure.Halt, fmt.Errorf("table %s: no operation %q for this policy", req.Table, req.Op))
	}
	t, err := b.Tables.Get(ctx, req.Policy.URL)
	if err != nil {
		if err := openUnavailable(err); errors.Is(err, scheduler.ErrUnavailable) {
			return scheduler.RunReport{}, fmt.Errorf("table %s: %w", req.Table, err)
		}
		return scheduler.RunReport{}, failure.With(failure.Halt, fmt.Errorf("table %s: %w", req.Table, err))
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
	res, err := op.Run(ctx, t)
	rep := report(res)
	if rep.Committed && ctx.Err() == nil {
		rep.Polled = b.refresh(ctx, req.Policy)
	}
	if err != nil {
		if missing := missingOf(err); len(missing) > 0 && ctx.Err() == nil {
			rep.Missing = b.stillNamed(ctx, t, req.Table, missing)
		} else if !rep.Committed && failure.Of(err) == failure.Retry {
			err = logUnavailable(ctx, t, err)
		}
		err = fmt.Errorf("table %s: %w", req.Table, err)
	}
	return rep, err
}

// report converts an operation's result to the scheduler's RunReport.
func report(r tableop.Result) scheduler.RunReport {
	return scheduler.RunReport{
		Committed:    r.Committed,
		Version:      r.Version,
		ReadVersion:  r.ReadVersion,
		FilesRemoved: r.FilesRemoved,
		BytesRemoved: r.BytesRemoved,
		FilesAdded:   r.FilesAdded,
		BytesAdded:   r.BytesAdded,
		Conflicts:    r.Conflicts,
		Counts:       r.Counts,
		Quarantined:  r.Quarantined,
		Held:         holds(r.Held),
		Done:         r.Done,
	}
}

// holds converts the operations' holds to the scheduler's.
func holds(hs []tableop.Hold) []scheduler.Hold {
	if len(hs) == 0 {
		return nil
	}
	out := make([]scheduler.Hold, len(hs))
	for i, h := range hs {
		out[i] = scheduler.Hold{Code: h.Code, Reason: h.Reason, Files: h.Files, Bytes: h.Bytes, EligibleAt: h.EligibleAt}
	}
	return out
}

// holdLease takes the table's lease for one run. It returns the held
// lease, or a skip reason when another replica holds it.
func (b *Backend) holdLease(ctx context.Context, t *delta.Table, name string) (*heldLease, string, error) {
	ttl := b.LeaseTTL
	if ttl <= 0 {
		ttl = 60 * time.Second
	}
	cs, err := t.Conditional()
	if err != nil {
		return nil, "", failure.With(failure.Halt, fmt.Errorf("table %s: lease: %w", name, err))
	}
	l, err := lease.New(cs, t.Name(), b.LeaseHolder, lease.Options{TTL: ttl, Now: b.Now})
	if err != nil {
		return nil, "", failure.With(failure.Halt, fmt.Errorf("table %s: %w", name, err))
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

// Poll is a PollFunc. When lastSeen >= 0 an idle table costs one existence
// check of the next commit; when the log moved, only the commits after
// lastSeen are read and applied to the files the poll already knows (a
// protocol or metadata change, a gap, or a long tail falls back to a full
// snapshot load). A table compactord cannot write is reported as a Halt
// error, so the scheduler never runs it.
func (b *Backend) Poll(ctx context.Context, p policies.Policy, lastSeen int64) (scheduler.PollResult, error) {
	res, err := b.poll(ctx, p, lastSeen)
	return res, redact.Error(err)
}

func (b *Backend) poll(ctx context.Context, p policies.Policy, lastSeen int64) (scheduler.PollResult, error) {
	ctx = b.withBudget(ctx)
	t, err := b.Tables.Get(ctx, p.URL)
	if err != nil {
		if err := openUnavailable(err); errors.Is(err, scheduler.ErrUnavailable) {
			return scheduler.PollResult{}, fmt.Errorf("table %s: %w", p.Name, err)
		}
		return scheduler.PollResult{}, failure.With(failure.Halt, fmt.Errorf("table %s: %w", p.Name, err))
	}
	if lastSeen >= 0 {
		b.mu.Lock()
		pt := b.polled[pollKey(p)]
		b.mu.Unlock()
		prev := pt.snap
		newer, err := delta.HasNewer(ctx, t, lastSeen)
		if err != nil {
			return scheduler.PollResult{}, err
		}
		if !newer {
			return scheduler.PollResult{Version: lastSeen}, nil
		}
		if prev != nil && prev.Version == lastSeen && b.keepsStatsFor(p, prev) {
			next, ok, err := delta.Advance(ctx, t, prev, maxIncrementalCommits)
			if err != nil {
				return scheduler.PollResult{}, fmt.Errorf("table %s: %w", p.Name, err)
			}
			if ok {
				next = b.remember(p, next, prev)
				bl, err := ComputeBacklogExcluding(next, p, b.now(), b.quarantinedOf(p))
				if err != nil {
					return scheduler.PollResult{Version: next.Version}, err
				}
				return scheduler.PollResult{Version: next.Version, Changed: true, Backlog: &bl}, nil
			}
		}
	}
	b.fullLoads.Add(1)
	snap, err := delta.LoadSnapshot(ctx, t, -1)
	if err != nil {
		return scheduler.PollResult{}, fmt.Errorf("table %s: %w", p.Name, logUnavailable(ctx, t, err))
	}
	if err := delta.Writable(snap); err != nil {
		return scheduler.PollResult{Version: snap.Version}, failure.With(failure.Halt,
			fmt.Errorf("table %s (%s) version %d cannot be compacted by this build: %w", p.Name, p.URL, snap.Version, err))
	}
	snap = b.remember(p, snap, nil)
	bl, err := ComputeBacklogExcluding(snap, p, b.now(), b.quarantinedOf(p))
	if err != nil {
		return scheduler.PollResult{Version: snap.Version}, err
	}
	return scheduler.PollResult{Version: snap.Version, Changed: snap.Version > lastSeen, Backlog: &bl}, nil
}

// refresh polls p's table again after an operation committed, from the
// poll's own view of it (only the new commits are read), so that the
// scheduler's backlog is the one the run left. Nil when the table cannot
// be read again: the next poll recomputes it.
func (b *Backend) refresh(ctx context.Context, p policies.Policy) *scheduler.PollResult {
	b.mu.Lock()
	prev := b.polled[pollKey(p)].snap
	b.mu.Unlock()
	since := int64(-1)
	if prev != nil {
		since = prev.Version
	}
	res, err := b.poll(ctx, p, since)
	if err != nil || res.Backlog == nil {
		b.logger().Debug("backlog not refreshed after the run; the next poll recomputes it", "table", p.Name, "error", redact.Error(err))
		return nil
	}
	return &res
}

func pollKey(p policies.Policy) string { return p.Name + "\x00" + p.URL }

// keepsStatsFor reports whether prev, the poll's slim view of p's table,
// still has the stats p's planning reads: a policy reload that changed the
// clustering columns needs a full load, whose stats are whole.
func (b *Backend) keepsStatsFor(p policies.Policy, prev *delta.Snapshot) bool {
	cols, err := planner.StatsColumns(prev, p.PlannerPolicy(b.now()))
	return err != nil || prev.SlimmableTo(cols)
}

// remember keeps snap slim (delta.Snapshot.Slim: no tombstones, stats cut
// to what the backlog's planning reads) as the poll's view of p's table,
// reusing the files of prev it shares, and returns what it keeps. A
// snapshot the planner cannot plan is kept whole (its backlog fails the
// same way on every poll).
func (b *Backend) remember(p policies.Policy, snap, prev *delta.Snapshot) *delta.Snapshot {
	if cols, err := planner.StatsColumns(snap, p.PlannerPolicy(b.now())); err == nil {
		if slim, err := snap.Slim(cols, prev); err == nil {
			snap = slim
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.polled == nil {
		b.polled = map[string]polledTable{}
	}
	if b.shared == nil {
		b.shared = delta.NewShared()
	}
	b.shared.Share(snap)
	b.polled[pollKey(p)] = polledTable{snap: snap}
	return snap
}

// Plan is a dry run with the same planner and options a run would use.
func (b *Backend) Plan(ctx context.Context, p policies.Policy, exclude map[string]bool) (*planner.CompactionPlan, error) {
	t, err := b.Tables.Get(ctx, p.URL)
	if err != nil {
		return nil, redact.Error(fmt.Errorf("table %s: %w", p.Name, err))
	}
	pl, _, err := compaction.PlanTable(ctx, t, compaction.OptionsFor(p, b.env(p, exclude), b.Options))
	return pl, redact.Error(err)
}

// ComputeBacklog measures the work waiting in a snapshot under p. Its
// small-file counts are the planner's own (planner.BacklogOf with the
// policy a run would plan with): every small file, the ones a run would
// merge (MergeableFiles, so the small_files trigger fires exactly when the
// planner would find merge work), and the ones it would hold back, by
// reason. It also counts the deleted-rows ratio and, on clustered
// tables (by policy or by the table's own clustering columns), the bytes
// of files no clustering wrote (no clusteringProvider).
func ComputeBacklog(snap *delta.Snapshot, p policies.Policy, now time.Time) (scheduler.Backlog, error) {
	return ComputeBacklogExcluding(snap, p, now, nil)
}

// ComputeBacklogExcluding is ComputeBacklog with the files of quarantined
// (paths as in add actions) left apart: they are planned as a run plans
// them (skipped), not counted as small files or held ones, and counted in
// QuarantinedFiles and QuarantinedBytes instead.
func ComputeBacklogExcluding(snap *delta.Snapshot, p policies.Policy, now time.Time, quarantined map[string]bool) (scheduler.Backlog, error) {
	pp := p.PlannerPolicy(now)
	if len(quarantined) > 0 {
		pp.Exclude = quarantined
	}
	pb, err := planner.BacklogOf(snap, pp)
	if err != nil {
		return scheduler.Backlog{}, fmt.Errorf("table %s: backlog: %w", p.Name, err)
	}
	b := scheduler.Backlog{SmallFiles: pb.SmallFiles, SmallBytes: pb.SmallBytes,
		MergeableFiles: pb.MergeableFiles, MergeableBytes: pb.MergeableBytes}
	for _, h := range pb.Held {
		if h.Code == planner.SkipQuarantined {
			b.SmallFiles -= h.Files
			b.SmallBytes -= h.Bytes
			continue
		}
		b.Held = append(b.Held, holds(compaction.Holds([]planner.Skip{h}))...)
	}
	clustered := len(p.Clustering.Columns) > 0 || p.Strategy == policies.StrategyLightweight || p.Strategy == policies.StrategyZcube
	if !clustered {
		if cols, err := delta.ClusteringColumns(snap); err == nil && len(cols) > 0 {
			clustered = true
		}
	}
	var rows, deleted int64
	for _, f := range snap.Files {
		b.Files++
		b.Bytes += f.Size
		if quarantined[f.Path] {
			b.QuarantinedFiles++
			b.QuarantinedBytes += f.Size
		}
		if clustered && f.ClusteringProvider == nil {
			b.UnclusteredBytes += f.Size
		}
		if n, ok, err := f.NumRecords(); err == nil && ok {
			rows += n
			deleted += f.NumDeleted()
		}
	}
	if rows > 0 {
		b.DeletedRowsRatio = float64(deleted) / float64(rows)
	}
	return b, nil
}
