package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"gocloud.dev/pubsub"

	"github.com/compactord/compactord/clusteradvise"
	"github.com/compactord/compactord/events"
	"github.com/compactord/compactord/inspect"
	"github.com/compactord/compactord/internal/httpapi"
	"github.com/compactord/compactord/internal/redact"
	"github.com/compactord/compactord/internal/webui"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/runner"
	"github.com/compactord/compactord/scheduler"
)

// LoadPolicyDir is policies.LoadDir for the command-line argument what
// ("--policies", "check"): a file given for the directory is named as the
// argument's mistake, with the directory to give instead.
func LoadPolicyDir(what, dir string) (*policies.Set, error) {
	set, err := policies.LoadDir(dir)
	if nd := (*policies.NotDirError)(nil); errors.As(err, &nd) {
		return nil, fmt.Errorf("%s wants a directory of .hcl files; %s is a file (its directory is %s)", what, nd.Path, nd.Dir())
	}
	return set, err
}

// Options are the settings of one daemon (`compactord run`'s flags).
type Options struct {
	PolicyDir string
	// HTTP, Poll, Workers and ShutdownTimeout override the daemon block
	// when set.
	HTTP            string
	Poll            time.Duration
	Workers         int
	ShutdownTimeout time.Duration
	Replica         string
	// Version is the daemon's version (/status, the pages, metrics).
	Version string
	// HTTPTokenFile holds the bearer token of the mutating endpoints on a
	// non-loopback listener.
	HTTPTokenFile string
	// HTTPAllowedHosts are the Host names, besides localhost and the
	// loopback addresses, that a loopback listener answers to.
	HTTPAllowedHosts []string

	// Clock replaces the wall clock of the scheduler (tests).
	Clock scheduler.Clock
	// ProgressInterval is how often a running operation logs its progress
	// (0: the scheduler's 30s; tests shorten it).
	ProgressInterval time.Duration
}

// Backend is what the daemon does to tables; the real one works on Delta
// tables, tests and the demo may wrap it.
type Backend struct {
	// Run runs one operation of a table.
	Run scheduler.RunFunc[policies.Policy]
	// Spec is the scheduler's view of a policy (nil: runner.SpecOf with
	// one unnamed operation).
	Spec func(policies.Policy) (scheduler.Spec, error)
	// Poll checks a table for new log entries.
	Poll scheduler.PollFunc[policies.Policy]
	// Plan is a dry run with the real planner; the result is JSON-encoded.
	Plan func(ctx context.Context, p policies.Policy, exclude map[string]bool) (any, error)
	// Predicates records pushed predicates in a table's clustering
	// evidence (clusteradvise.RecordPushed) and returns how many distinct
	// predicates it keeps. May be nil: POST /tables/{name}/predicates is
	// then refused.
	Predicates func(ctx context.Context, p policies.Policy, batch []clusteradvise.Pushed) (int, error)
	// Retain is told the current policies after each (re)load so the
	// Backend can release handles of removed tables. May be nil.
	Retain func(ps []policies.Policy)
	// Inspect reports on a table as `compactord inspect` does (the web
	// view's charts). May be nil.
	Inspect func(ctx context.Context, p policies.Policy) (*inspect.Report, error)
	// Close releases the Backend. May be nil.
	Close func() error
	// Quarantine keeps the tables' quarantine lists across restarts
	// (runner.Backend.QuarantineStore). May be nil: in memory only.
	Quarantine scheduler.QuarantineStore[policies.Policy]
	// Halts keeps the tables' halts across restarts and between replicas
	// (runner.Backend.HaltStore). May be nil: in memory only.
	Halts scheduler.HaltStore[policies.Policy]
}

// Daemon is one running `compactord run`.
type Daemon struct {
	opts    Options
	log     hclog.Logger
	be      Backend
	sched   *scheduler.Scheduler[policies.Policy]
	daemon  policies.Daemon
	started time.Time

	// token is the bearer token of --http-token-file ("" when none).
	token string
	// hosts are the names of --http-allowed-host, canonical (hostName).
	hosts map[string]bool
	// ui is the HTML view, with its in-memory history.
	ui *webui.UI
	// events is the change-event consumer (nil when the daemon block has
	// no events block).
	events *events.Consumer
	// reloadMu serializes reloads (SIGHUP and POST /reload).
	reloadMu sync.Mutex

	stopping atomic.Bool
	mu       sync.Mutex // guards the fields below
	set      *policies.Set
	reloaded time.Time
	loadErr  string
	counters httpapi.Counters
}

// New loads the policies once (an error here fails startup) and
// creates the Backend and the scheduler with the daemon settings.
func New(o Options, log hclog.Logger, mkBackend func(policies.Daemon) Backend) (*Daemon, error) {
	set, err := LoadPolicyDir("--policies", o.PolicyDir)
	if err != nil {
		return nil, fmt.Errorf("load policies: %w", err)
	}
	logPolicyWarnings(log, set)
	dc := set.Daemon
	if o.HTTP != "" {
		dc.HTTP = o.HTTP
	}
	if o.Poll > 0 {
		dc.Poll = o.Poll
	}
	if o.Workers > 0 {
		dc.Workers = o.Workers
	}
	if o.ShutdownTimeout > 0 {
		dc.ShutdownTimeout = o.ShutdownTimeout
	}
	if o.Replica != "" {
		dc.Replica = o.Replica
	}
	var token string
	if o.HTTPTokenFile != "" {
		if token, err = httpapi.ReadTokenFile(o.HTTPTokenFile); err != nil {
			return nil, err
		}
	}
	hosts, err := httpapi.AllowedHosts(o.HTTPAllowedHosts)
	if err != nil {
		return nil, err
	}
	be := mkBackend(dc)
	d := &Daemon{opts: o, log: log, be: be, daemon: dc, started: time.Now(), set: set, reloaded: time.Now(), token: token,
		hosts: hosts}
	spec := be.Spec
	if spec == nil {
		spec = func(p policies.Policy) (scheduler.Spec, error) { return runner.SpecOf(p, nil) }
	}
	d.sched = scheduler.New(scheduler.Config[policies.Policy]{
		Spec:         spec,
		Same:         runner.SamePolicy,
		Run:          be.Run,
		Poll:         be.Poll,
		Workers:      dc.Workers,
		GroupQuotas:  dc.GroupQuotas,
		PollInterval: dc.PollInterval(),
		BackoffBase:  dc.BackoffBase,
		BackoffMax:   dc.BackoffMax,
		Logger:       log.Named("scheduler"),
		Clock:        o.Clock,
		Quarantine:   be.Quarantine,
		Halts:        be.Halts,

		ProgressLogInterval: o.ProgressInterval,
	})
	if dc.Events.Enabled() {
		u := dc.Events.URL
		d.events = events.NewConsumer(func(ctx context.Context) (*pubsub.Subscription, func() error, error) {
			return events.Open(ctx, u)
		},
			d.pollNow, events.Options{Logger: log.Named("events")})
	}
	if d.ui, err = webui.New(webui.Source{Version: o.Version, Replica: dc.Replica, Status: d.sched.Status,
		Samples: d.sched.Samples, Policy: d.sched.Policy, Plan: be.Plan, Inspect: be.Inspect}); err != nil {
		return nil, err
	}
	return d, nil
}

// pollNow is the events consumer's poll: the scheduler's PollNow, with a
// table that is gone or halted counted as done (the hint has nothing to do
// there; the message is acknowledged).
func (d *Daemon) pollNow(ctx context.Context, table string) error {
	err := d.sched.PollNow(ctx, table)
	if errors.Is(err, scheduler.ErrUnknownTable) || errors.Is(err, scheduler.ErrHalted) {
		return nil
	}
	return err
}

// watchTables hands the loaded tables to the events consumer.
func (d *Daemon) watchTables(ps []policies.Policy) {
	if d.events == nil {
		return
	}
	ts := make([]events.Table, len(ps))
	for i, p := range ps {
		ts[i] = events.Table{Name: p.Name, URL: p.URL}
	}
	if err := d.events.SetTables(ts); err != nil {
		d.log.Error("change events cannot map onto the tables; keeping the previous mapping", "error", redact.Error(err))
	}
}

// logPolicyWarnings logs what the policy directory has that does not stop
// the daemon (an empty directory, a schedule that never fires).
func logPolicyWarnings(log hclog.Logger, set *policies.Set) {
	for _, w := range set.Warnings {
		log.Warn("policy warning", "warning", policies.FormatDiagnostic(w))
	}
}

// start applies the loaded policies to the scheduler.
func (d *Daemon) start() {
	d.mu.Lock()
	ps := d.set.Tables
	d.mu.Unlock()
	if d.be.Retain != nil {
		d.be.Retain(ps)
	}
	added, _, _ := d.sched.Apply(ps)
	d.watchTables(ps)
	args := []any{"policies", d.opts.PolicyDir, "tables", len(ps), "added", added,
		"workers", d.daemon.Workers, "poll", d.daemon.PollInterval(), "replica", d.daemon.Replica}
	if d.events != nil {
		args = append(args, "events", redact.URL(d.daemon.Events.URL))
	}
	d.log.Info("daemon started", args...)
}

// Reload re-reads the policy directory. A bad directory keeps the previous
// policies running and is reported in /status and the reload metric.
func (d *Daemon) Reload() error {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	set, err := LoadPolicyDir("--policies", d.opts.PolicyDir)
	err = redact.Error(err) // shown in /status and the reload's answer
	d.mu.Lock()
	if err != nil {
		d.counters.ReloadsFailed++
		d.loadErr = err.Error()
		d.mu.Unlock()
		d.log.Error("policy reload failed; keeping the previous policies", "error", err)
		return err
	}
	logPolicyWarnings(d.log, set)
	d.counters.ReloadsOK++
	d.loadErr = ""
	d.reloaded = time.Now()
	if !reflect.DeepEqual(set.Daemon, d.set.Daemon) {
		d.log.Warn("daemon block changed; its settings apply at the next restart")
	}
	d.set = set
	d.mu.Unlock()
	added, removed, changed := d.sched.Apply(set.Tables)
	d.watchTables(set.Tables)
	d.log.Info("policies reloaded", "added", added, "removed", removed, "changed", changed)
	if d.be.Retain != nil && len(removed)+len(changed) > 0 {
		// Close the handles of tables that went away only once their
		// cancelled runs have cleaned up through them.
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := d.sched.WaitStopped(ctx); err != nil {
				d.log.Warn("runs of removed tables still cleaning up; keeping their table handles", "error", err)
				return
			}
			d.mu.Lock()
			ps := d.set.Tables
			d.mu.Unlock()
			d.be.Retain(ps)
		}()
	}
	return nil
}

// Serve runs until ctx ends, then shuts down within the shutdown timeout.
// ln, when non-nil, is used instead of listening on the configured address.
func (d *Daemon) Serve(ctx context.Context, sigs <-chan os.Signal, ln net.Listener) error {
	var srv *http.Server
	if ln == nil && d.daemon.HTTP != "off" {
		var err error
		ln, err = net.Listen("tcp", d.daemon.HTTP)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", d.daemon.HTTP, err)
		}
	}
	httpDone := make(chan struct{})
	if ln != nil {
		loopback := httpapi.IsLoopback(ln.Addr())
		srv = &http.Server{Handler: d.Handler(loopback), ReadHeaderTimeout: 10 * time.Second}
		d.log.Info("http listening", "addr", ln.Addr().String(), "loopback", loopback, "token", d.token != "")
		if !loopback && d.token == "" {
			d.log.Warn("the http listener is not loopback and there is no --http-token-file: POST /tables/{name}/run, POST /tables/{name}/resume and POST /reload are refused")
		}
		go func() {
			defer close(httpDone)
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				d.log.Error("http server failed", "error", err)
			}
		}()
	} else {
		close(httpDone)
	}
	d.start()
	sctx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	go d.ui.Sample(sctx, webui.SamplePeriod)
	go releaseAfterFirstPolls(sctx, d.sched.Unpolled, d.freeOSMemory, releaseCheckEvery)
	eventsDone := make(chan struct{})
	ectx, stopEvents := context.WithCancel(ctx)
	defer stopEvents()
	if d.events != nil {
		go func() { defer close(eventsDone); d.events.Run(ectx) }()
	} else {
		close(eventsDone)
	}

	for {
		select {
		case s := <-sigs:
			switch s {
			case syscall.SIGUSR1:
				n := d.sched.TriggerAll(scheduler.ReasonSignal)
				d.mu.Lock()
				d.counters.SignalRuns++
				d.mu.Unlock()
				d.log.Info("SIGUSR1: running every enabled table now", "tables", n)
			case syscall.SIGHUP:
				d.log.Info("SIGHUP: reloading policies")
				_ = d.Reload()
			}
			continue
		case <-ctx.Done():
		}
		break
	}

	d.stopping.Store(true)
	// Events first: a message whose poll is cut short stays unacknowledged
	// and comes again to the next daemon.
	stopEvents()
	<-eventsDone
	d.log.Info("shutting down: no new runs; waiting for in-flight runs", "timeout", d.daemon.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), d.daemon.ShutdownTimeout)
	defer cancel()
	if err := d.sched.Shutdown(sctx); errors.Is(err, scheduler.ErrRunsStuck) {
		d.log.Error("cancelled runs did not return; exiting anyway (files they wrote are orphans a later run may clean)", "error", err)
	} else if err != nil {
		d.log.Warn("in-flight runs were cancelled at the shutdown deadline; their uncommitted files were deleted", "error", err)
	}
	if srv != nil {
		hctx, hcancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = srv.Shutdown(hctx)
		hcancel()
		<-httpDone
	}
	if d.be.Close != nil {
		if err := d.be.Close(); err != nil {
			d.log.Warn("closing tables", "error", err)
		}
	}
	d.log.Info("stopped")
	return nil
}

// Handler is the daemon's HTTP API and HTML view; loopback tells whether
// the listener is on loopback only.
func (d *Daemon) Handler(loopback bool) http.Handler {
	return httpapi.Handler(&httpapi.Daemon{
		Version: d.opts.Version, Log: d.log, Token: d.token, Hosts: d.hosts,
		Page: func() httpapi.StatusPage {
			d.mu.Lock()
			defer d.mu.Unlock()
			return httpapi.StatusPage{
				Version: d.opts.Version, Started: d.started, Policies: d.opts.PolicyDir,
				LastReload: d.reloaded, ReloadError: d.loadErr, Stopping: d.stopping.Load(),
				Workers: d.daemon.Workers, Replica: d.daemon.Replica, PollInterval: d.daemon.PollInterval().String(),
				Events: d.eventsStatus(),
			}
		},
		Stopping: d.stopping.Load,
		Counters: func() httpapi.Counters {
			d.mu.Lock()
			c := d.counters
			d.mu.Unlock()
			if d.events != nil {
				st := d.events.Stats()
				c.Events = &st
			}
			return c
		},
		Tables:  d.sched.Status,
		Policy:  d.sched.Policy,
		Plan:    d.be.Plan,
		Trigger: d.sched.Trigger,
		Reload:  d.Reload,
		Resume:  d.sched.Resume,
		Predicates: func(ctx context.Context, name string, batch []clusteradvise.Pushed) (int, error) {
			p, ok := d.sched.Policy(name)
			if !ok {
				return 0, fmt.Errorf("%w: %s", scheduler.ErrUnknownTable, name)
			}
			if d.be.Predicates == nil {
				return 0, httpapi.ErrNotSupported
			}
			return d.be.Predicates(ctx, p, batch)
		},
		Mount: d.ui.Register,
	}, loopback)
}

// eventsStatus is the events part of /status (nil when events are off).
func (d *Daemon) eventsStatus() *httpapi.EventsStatus {
	if d.events == nil {
		return nil
	}
	return &httpapi.EventsStatus{URL: redact.URL(d.daemon.Events.URL), ReconcileInterval: d.daemon.Events.ReconcileInterval.String(), Stats: d.events.Stats()}
}

// Events is the daemon's change-event consumer (nil when events are off;
// tests read its counters).
func (d *Daemon) Events() *events.Consumer { return d.events }

// Scheduler is the daemon's scheduler (tests and the demo watch it).
func (d *Daemon) Scheduler() *scheduler.Scheduler[policies.Policy] { return d.sched }

// Tables is the policies loaded last.
func (d *Daemon) Tables() []policies.Policy {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.set.Tables
}
