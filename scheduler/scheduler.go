package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/internal/progress"
)

// Config configures a Scheduler of tables whose policies are of type P.
// Zero fields take the documented defaults.
type Config[P any] struct {
	// Spec says what the scheduler needs of a policy; an error (a bad
	// schedule) halts the table. Required.
	Spec func(P) (Spec, error)
	// Same reports whether two policies of the same table are the same (an
	// unchanged table keeps running on Apply); default reflect.DeepEqual.
	Same func(a, b P) bool
	// Run executes one operation of a table; a run calls it for each of
	// Spec.Ops in order and stops at the first that fails or is skipped.
	// Required.
	Run RunFunc[P]
	// Poll checks a table for new log entries. Required.
	Poll PollFunc[P]
	// Workers is the global limit of runs at once (default 2). When more
	// runs are due than workers are free, the fleet queue (fleet.go) picks
	// the next.
	Workers int
	// Quota is a table's default share of worker time over QuotaWindow,
	// in workers (default DefaultQuota); Spec.Quota overrides it.
	Quota float64
	// GroupQuotas bound the worker time of each quota group (Spec.Group)
	// over QuotaWindow, in workers; a group not named has no bound.
	GroupQuotas map[string]float64
	// QuotaWindow is the sliding window of the quotas (default
	// DefaultQuotaWindow).
	QuotaWindow time.Duration
	// Aging is the wait that adds one to a waiting run's priority
	// (default DefaultAging): the longer a table waits, the sooner it runs.
	Aging time.Duration
	// PollInterval is the poll period of every table (default 1m).
	PollInterval time.Duration
	// PollConcurrency bounds the polls running at once (default
	// DefaultPollConcurrency); the others wait their turn. Without it the
	// first polls of a large fleet load every table's snapshot at once,
	// and the process keeps the memory of that peak.
	PollConcurrency int
	// BackoffBase and BackoffMax bound retry backoff (defaults 5s, 10m).
	BackoffBase, BackoffMax time.Duration
	// Clock is the time source (default RealClock).
	Clock Clock
	// Rand returns numbers in [0,1) for jitter (default math/rand/v2).
	Rand func() float64
	// Logger receives the scheduler's logs (default a null logger).
	Logger hclog.Logger
	// CancelGrace bounds how long Shutdown waits, after cancelling runs at
	// its deadline, for them to return (they delete their uncommitted files
	// on the way out). Default 5s.
	CancelGrace time.Duration
	// ProgressLogInterval is how often a running operation that reports
	// progress (RunRequest.Progress) logs it (default 30s).
	ProgressLogInterval time.Duration
	// Quarantine keeps each table's quarantine list across restarts (nil:
	// in memory only).
	Quarantine QuarantineStore[P]
	// MissingRuns is how many consecutive runs must find a file the newest
	// snapshot names missing (RunReport.Missing) before it is quarantined
	// (default DefaultMissingRuns). A run that fails without meeting it
	// neither counts nor resets; a run that succeeds, or misses other files
	// only, resets its count.
	MissingRuns int
	// MaxQuarantined bounds a table's quarantine list: a run that would
	// grow it past this halts the table (default DefaultMaxQuarantined).
	MaxQuarantined int
	// Halts keeps each table's halt across restarts and between replicas
	// (nil: in memory only).
	Halts HaltStore[P]
}

// DefaultPollConcurrency is the default bound of polls at once.
const DefaultPollConcurrency = 16

// Errors returned by Trigger.
var (
	ErrUnknownTable = errors.New("no such table")
	ErrHalted       = errors.New("table is halted")
	ErrDisabled     = errors.New("table is disabled")
	ErrStopping     = errors.New("daemon is shutting down")
)

// Scheduler runs the tables of a policy set.
type Scheduler[P any] struct {
	cfg   Config[P]
	log   hclog.Logger
	fleet *fleet
	// wheel holds the tables no goroutine works, by when they are due;
	// dispatch hands the due ones to the poll workers through ready
	// (wheel.go).
	wheel     *wheel[P]
	ready     chan *table[P]
	wheelOnce sync.Once

	runCtx     context.Context // cancelled at the hard shutdown deadline
	cancelRuns context.CancelFunc
	stopping   chan struct{}
	stopOnce   sync.Once
	started    time.Time

	mu       sync.Mutex
	specErrs map[string]error // tables whose Spec failed (halted)
	tables   map[string]*table[P]
	stopped  []*table[P] // stopped by Apply, until WaitStopped sees them exit
	applied  bool        // Apply ran once: later ones are reloads
	wg       sync.WaitGroup
	// unpolled counts the tables whose first poll is still to come
	// (Unpolled).
	unpolled atomic.Int64
}

// New returns a scheduler with no tables; add them with Apply.
func New[P any](cfg Config[P]) *Scheduler[P] {
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Minute
	}
	if cfg.PollConcurrency <= 0 {
		cfg.PollConcurrency = DefaultPollConcurrency
	}
	if cfg.Quota <= 0 {
		cfg.Quota = DefaultQuota
	}
	if cfg.QuotaWindow <= 0 {
		cfg.QuotaWindow = DefaultQuotaWindow
	}
	if cfg.Aging <= 0 {
		cfg.Aging = DefaultAging
	}
	if cfg.BackoffBase <= 0 {
		cfg.BackoffBase = 5 * time.Second
	}
	if cfg.BackoffMax < cfg.BackoffBase {
		cfg.BackoffMax = 10 * time.Minute
	}
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	if cfg.ProgressLogInterval <= 0 {
		cfg.ProgressLogInterval = 30 * time.Second
	}
	if cfg.MissingRuns <= 0 {
		cfg.MissingRuns = DefaultMissingRuns
	}
	if cfg.MaxQuarantined <= 0 {
		cfg.MaxQuarantined = DefaultMaxQuarantined
	}
	if cfg.CancelGrace <= 0 {
		cfg.CancelGrace = 5 * time.Second
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Same == nil {
		cfg.Same = func(a, b P) bool { return reflect.DeepEqual(a, b) }
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Scheduler[P]{
		cfg:        cfg,
		log:        cfg.Logger,
		wheel:      newWheel[P](),
		ready:      make(chan *table[P]),
		fleet:      newFleet(cfg.Workers, cfg.QuotaWindow, cfg.Aging, cfg.GroupQuotas, cfg.Clock),
		runCtx:     ctx,
		cancelRuns: cancel,
		stopping:   make(chan struct{}),
		started:    cfg.Clock.Now(),
		tables:     map[string]*table[P]{},
		specErrs:   map[string]error{},
	}
}

// Apply makes the scheduler's tables match ps: new tables start, removed
// tables stop (an in-flight run of theirs is cancelled and cleans up), and
// changed tables restart with fresh state (which clears a halt). Unchanged
// tables keep running undisturbed, but a halted one is re-checked: its
// halt is cleared (unless its policy is invalid) and it polls at once, so
// a cause fixed since halts it no more. Every Apply but the first is a
// reload: the tables it starts clear their stored halt (Config.Halts)
// instead of adopting it.
func (s *Scheduler[P]) Apply(ps []P) (added, removed, changed []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.stopping:
		return nil, nil, nil
	default:
	}
	want := map[string]P{}
	specs := map[string]Spec{}
	var order []string
	for _, p := range ps {
		sp, err := s.cfg.Spec(p)
		if sp.Name == "" {
			s.log.Error("policy without a table name ignored", "error", err)
			continue
		}
		want[sp.Name] = p
		if _, dup := specs[sp.Name]; !dup {
			order = append(order, sp.Name)
		}
		specs[sp.Name] = sp
		if err != nil {
			specs[sp.Name] = Spec{Name: sp.Name, URL: sp.URL, Strategy: sp.Strategy, Enabled: sp.Enabled}
			s.specErrs[sp.Name] = err
		} else {
			delete(s.specErrs, sp.Name)
		}
	}
	for name, t := range s.tables {
		p, ok := want[name]
		switch {
		case !ok:
			t.stop()
			s.stopped = append(s.stopped, t)
			delete(s.tables, name)
			removed = append(removed, name)
		case !s.cfg.Same(t.policy, p):
			t.stop()
			s.stopped = append(s.stopped, t)
			s.tables[name] = s.startTable(p, specs[name], s.specErrs[name], s.applied)
			changed = append(changed, name)
		case s.specErrs[name] == nil:
			t.resume("reload")
		}
	}
	for _, name := range order {
		if _, ok := s.tables[name]; !ok {
			s.tables[name] = s.startTable(want[name], specs[name], s.specErrs[name], s.applied)
			added = append(added, name)
		}
	}
	s.applied = true
	sort.Strings(added)
	sort.Strings(removed)
	sort.Strings(changed)
	return added, removed, changed
}

// WaitStopped waits until the work of the tables that Apply stopped has
// ended (their cancelled runs have cleaned up), so the caller may close
// what those runs used.
func (s *Scheduler[P]) WaitStopped(ctx context.Context) error {
	s.mu.Lock()
	ts := s.stopped
	s.stopped = nil
	s.mu.Unlock()
	for i, t := range ts {
		select {
		case <-t.done:
		case <-ctx.Done():
			s.mu.Lock()
			s.stopped = append(s.stopped, ts[i:]...)
			s.mu.Unlock()
			return ctx.Err()
		}
	}
	return nil
}

// Trigger asks for a run of one table now. Triggers coalesce: while a run is
// queued, more triggers add nothing (the run reads the table when it starts);
// while one is running, at most one more follows it. A manual trigger skips any backoff wait.
func (s *Scheduler[P]) Trigger(name, reason string) error {
	t, err := s.live(name)
	if err != nil {
		return err
	}
	return t.trigger(reason)
}

// live returns the table called name, or ErrStopping while the scheduler
// shuts down, or ErrUnknownTable.
func (s *Scheduler[P]) live(name string) (*table[P], error) {
	select {
	case <-s.stopping:
		return nil, ErrStopping
	default:
	}
	s.mu.Lock()
	t, ok := s.tables[name]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTable, name)
	}
	return t, nil
}

// TriggerAll triggers every enabled, not halted table and returns how many.
func (s *Scheduler[P]) TriggerAll(reason string) int {
	s.mu.Lock()
	ts := make([]*table[P], 0, len(s.tables))
	for _, t := range s.tables {
		ts = append(ts, t)
	}
	s.mu.Unlock()
	n := 0
	for _, t := range ts {
		if t.trigger(reason) == nil {
			n++
		}
	}
	return n
}

// Policy returns the current policy of a table.
func (s *Scheduler[P]) Policy(name string) (P, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tables[name]
	if !ok {
		var zero P
		return zero, false
	}
	return t.policy, true
}

// Status returns every table's state, sorted by name.
func (s *Scheduler[P]) Status() []TableStatus {
	s.mu.Lock()
	ts := make([]*table[P], 0, len(s.tables))
	for _, t := range s.tables {
		ts = append(ts, t)
	}
	s.mu.Unlock()
	fv := s.fleet.view()
	out := make([]TableStatus, 0, len(ts))
	for _, t := range ts {
		st := t.status()
		st.Fleet = fv.of(t.spec.Name, t.spec.Group, t.quota())
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ErrRunsStuck is returned by Shutdown when cancelled runs did not return
// within Config.CancelGrace.
var ErrRunsStuck = errors.New("cancelled runs did not return in time")

// Shutdown stops taking work and waits for in-flight runs to finish. When ctx
// ends first, the runs are cancelled (they abandon their attempt and delete
// what they wrote) and Shutdown waits up to Config.CancelGrace for them to return.
// It returns ctx.Err() when runs had to be cancelled, joined with
// ErrRunsStuck when they did not return.
func (s *Scheduler[P]) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() { close(s.stopping) })
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		s.cancelRuns()
		return nil
	case <-ctx.Done():
	}
	s.log.Warn("shutdown deadline reached; cancelling in-flight runs")
	s.cancelRuns()
	grace := time.NewTimer(s.cfg.CancelGrace)
	defer grace.Stop()
	select {
	case <-done:
		return ctx.Err()
	case <-grace.C:
		return errors.Join(ctx.Err(), ErrRunsStuck)
	}
}

// startTable starts a table: it is due at once (its first poll, so that
// /status has a backlog); reload says a reload started it (its stored halt
// is cleared, not adopted).
func (s *Scheduler[P]) startTable(p P, sp Spec, specErr error, reload bool) *table[P] {
	now := s.cfg.Clock.Now()
	t := &table[P]{
		s:        s,
		policy:   p,
		spec:     sp,
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		hidx:     -1,
		lastSeen: -1,
		state:    StateIdle,
		nextPoll: now,
	}
	if sp.Schedule != nil {
		t.nextCron = sp.Schedule.Next(now)
	}
	if specErr != nil {
		// Validate already rejected it; halt rather than guess. Not
		// stored: the policy is the cause, and a reload re-checks it.
		t.halted, t.haltReason, t.state = true, specErr.Error(), StateHalted
		t.haltSince = now.UTC()
	} else {
		t.unpolled = true
		s.unpolled.Add(1)
		if reload && s.cfg.Halts != nil {
			t.haltDirty = true // the first save clears a stored halt
		}
	}
	if !sp.Enabled && !t.halted {
		t.state = StateDisabled
	}
	s.startWheel()
	s.wheel.push(t, now, false)
	return t
}

// table is the scheduler's state of one table. No goroutine of its own:
// while idle it is an entry of the wheel; a poll worker, or the goroutine
// of its run, works it, one at a time (busy), which makes runs
// single-flight per table.
type table[P any] struct {
	s        *Scheduler[P]
	policy   P
	spec     Spec
	quit     chan struct{}
	done     chan struct{} // closed when the table's work has ended after it stopped
	quitOnce sync.Once
	doneOnce sync.Once
	// runCtx is the context of the table's current work, made by claim
	// (cancelRun, guarded by mu, cancels it: stop, or the work's end), so
	// that an idle table keeps no context; only the goroutine working the
	// table reads it.
	runCtx    context.Context
	cancelRun context.CancelFunc
	// begun is set by the table's first work (the stored halt and
	// quarantine read); only the goroutine working the table reads it.
	begun bool

	// hidx, due, urgent and hseq are the table's entry in the wheel
	// (guarded by the wheel's mutex; hidx -1: not in the heap).
	hidx   int
	due    time.Time
	urgent bool
	hseq   uint64

	mu sync.Mutex // guards the fields below (read by status)
	// busy is set while a goroutine works the table; exited once it
	// stopped for good.
	busy, exited bool
	// unpolled is set until the table's first poll is over
	// (Scheduler.Unpolled).
	unpolled bool
	// trigSet and trigReason are a trigger waiting (one slot: more
	// coalesce); kick is PollNow's request (pollWaiters say who waits).
	// (The flags of the table sit together: an idle table's state is
	// kept by the ten thousand, and a lone bool takes a word.)
	trigSet bool
	kick    bool
	// unevaluated is set when a run's report moved lastSeen and the
	// backlog (RunReport.Polled): the next poll checks the triggers on
	// them as on a log that moved, as it would have without the report.
	unevaluated bool
	halted      bool
	trigReason  string
	state       string
	lastSeen    int64
	backlog     *Backlog
	nextPoll    time.Time
	nextCron    time.Time
	retryAt     time.Time
	haltCheck   time.Time // a halted table's next look at its stored halt
	failures    int
	haltReason  string
	haltSince   time.Time
	haltDirty   bool // the halt (or its clearing) is not yet in Config.Halts
	haltStored  bool // Config.Halts holds this halt (saved or loaded)
	// waiting is set while the table cannot be read (ErrUnavailable):
	// why, since when and how many attempts failed so.
	waiting *Waiting
	// quarantine is the skip list by add path; missing counts the
	// consecutive runs that found each file missing (Config.MissingRuns).
	// Both stay nil while empty.
	quarantine       map[string]Quarantined
	missing          map[string]int
	quarantineLoaded bool // the stored list was read (Config.Quarantine)
	quarantineDirty  bool // changed since the last save
	lastRun          *RunRecord
	lastSuccess      time.Time
	lastError        string
	pollError        string
	counters         Counters
	progress         *progress.Progress // the running operation's, nil between runs
	// pollWaiters are the callers of PollNow waiting for the next poll.
	pollWaiters []chan struct{}
}

// log is the table's logger, named after it (made when a line is logged:
// an idle table keeps none).
func (t *table[P]) log() hclog.Logger { return t.s.log.Named(t.spec.Name) }

// stop ends the table: an in-flight run is cancelled, and a table no
// goroutine works is done at once.
func (t *table[P]) stop() {
	t.quitOnce.Do(func() { close(t.quit) })
	t.mu.Lock()
	t.firstPollOver()
	if t.cancelRun != nil {
		t.cancelRun()
	}
	idle := !t.busy && !t.exited
	if idle {
		t.exited = true
	}
	t.mu.Unlock()
	if idle {
		t.s.wheel.remove(t)
		t.doneOnce.Do(func() { close(t.done) })
	}
}

func (t *table[P]) trigger(reason string) error {
	t.mu.Lock()
	halted, enabled := t.halted, t.spec.Enabled
	if halted || !enabled {
		t.mu.Unlock()
		if halted {
			return fmt.Errorf("%w: %s", ErrHalted, t.spec.Name)
		}
		return fmt.Errorf("%w: %s", ErrDisabled, t.spec.Name)
	}
	if t.trigSet {
		t.counters.Coalesced++ // one already pending: coalesce
		t.mu.Unlock()
		return nil
	}
	t.trigSet, t.trigReason = true, reason
	t.mu.Unlock()
	t.wake()
	return nil
}

func (t *table[P]) stopped() bool {
	select {
	case <-t.quit:
		return true
	case <-t.s.stopping:
		return true
	default:
		return false
	}
}

func (t *table[P]) setState(s string) {
	t.mu.Lock()
	t.state = s
	t.mu.Unlock()
}

// ops are the operations of a run of t, in order (Spec.Ops; one unnamed
// operation when there are none).
func (t *table[P]) ops() []string {
	if len(t.spec.Ops) == 0 {
		return []string{""}
	}
	return t.spec.Ops
}
