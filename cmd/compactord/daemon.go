package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/internal/redact"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/runner"
	"github.com/compactord/compactord/scheduler"
)

// runCheck validates a policy directory and prints the effective policies.
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newCommandFlags(ctx, "check", "warn", stderr)
	asJSON := fs.Bool("json", false, "print the effective policies as JSON instead of HCL")
	showSecrets := fs.Bool("show-secrets", false, "print table URLs with their credentials (default: userinfo and credential parameters REDACTED)")
	dir, err := fs.parseOne(args, "policy directory")
	if err != nil {
		return err
	}
	set, err := loadPolicyDir("check", dir)
	if err != nil {
		return err
	}
	for _, w := range set.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", policies.FormatDiagnostic(w))
	}
	if !*showSecrets {
		// The output goes to terminals and CI logs: credentials in a URL
		// stay in the policy file.
		shown := *set
		shown.Tables = make([]policies.Policy, len(set.Tables))
		for i, p := range set.Tables {
			p.URL = redact.URL(p.URL)
			shown.Tables[i] = p
		}
		set = &shown
	}
	if *asJSON {
		return writeJSONTo(stdout, set)
	}
	return policies.WriteHCL(stdout, set)
}

// loadPolicyDir is policies.LoadDir for the command-line argument what
// ("--policies", "check"): a file given for the directory is named as the
// argument's mistake, with the directory to give instead.
func loadPolicyDir(what, dir string) (*policies.Set, error) {
	set, err := policies.LoadDir(dir)
	if nd := (*policies.NotDirError)(nil); errors.As(err, &nd) {
		return nil, fmt.Errorf("%s wants a directory of .hcl files; %s is a file (its directory is %s)", what, nd.Path, nd.Dir())
	}
	return set, err
}

// daemonOptions are the flags of `compactord run`.
type daemonOptions struct {
	PolicyDir string
	// HTTP, Poll, Workers and ShutdownTimeout override the daemon block
	// when set.
	HTTP            string
	Poll            time.Duration
	Workers         int
	ShutdownTimeout time.Duration
	Replica         string
	// HTTPTokenFile holds the bearer token of the mutating endpoints on a
	// non-loopback listener.
	HTTPTokenFile string
	// HTTPAllowedHosts are the Host names, besides localhost and the
	// loopback addresses, that a loopback listener answers to.
	HTTPAllowedHosts []string
	LogFormat        string
	LogLevel         string
	// Store is the object-store deadlines and retries of every table.
	Store *storeFlags

	// clock replaces the wall clock of the scheduler (tests).
	clock scheduler.Clock
	// progressInterval is how often a running operation logs its progress
	// (0: the scheduler's 30s; tests shorten it).
	progressInterval time.Duration
}

func parseDaemonFlags(ctx context.Context, args []string, stderr io.Writer) (daemonOptions, error) {
	var o daemonOptions
	fs := newCommandFlags(ctx, "run", "info", stderr)
	fs.StringVar(&o.PolicyDir, "policies", "", "directory of *.hcl policy files (required)")
	fs.StringVar(&o.HTTPTokenFile, "http-token-file", "", "file holding the bearer token that POST /tables/{name}/run, POST /tables/{name}/resume and POST /reload require when --http is not a loopback address")
	fs.Var((*stringsFlag)(&o.HTTPAllowedHosts), "http-allowed-host", "a Host name (no port) that a loopback --http listener also answers to, besides localhost, 127.0.0.1 and [::1] (repeatable; e.g. the name of an SSH tunnel or a local proxy)")
	fs.StringVar(&o.HTTP, "http", "", "listen address of /metrics, /status, ... (default from the daemon block, else 127.0.0.1:9464; \"off\" disables)")
	fs.durationVar(&o.Poll, "poll", 0, "log poll interval per table, e.g. 30s, 5m, 1d (default from the daemon block, else 1m)")
	fs.IntVar(&o.Workers, "workers", 0, "global limit of concurrent runs, 1 to 256 (default from the daemon block, else 2)")
	fs.durationVar(&o.ShutdownTimeout, "shutdown-timeout", 0, "how long SIGTERM waits for in-flight runs, e.g. 30s, 2m (default from the daemon block, else 30s)")
	fs.StringVar(&o.Replica, "replica", "", "replica name: hold a per-table lease for every run, so several daemons can watch the same tables (default from the daemon block; empty: single replica, no leases)")
	o.Store = fs.addCheckedStoreFlags()
	pos, err := fs.parse(args)
	if err != nil {
		return o, err
	}
	o.LogFormat, o.LogLevel = fs.logFormat, fs.logLevel
	workersSet := false
	fs.Visit(func(f *flag.Flag) { workersSet = workersSet || f.Name == "workers" })
	if workersSet && (o.Workers < 1 || o.Workers > 256) {
		// 0 is the unset value of the field, not a setting: refused
		// rather than silently the default.
		return o, fmt.Errorf("%w: --workers %d: want 1 to 256 runs at once (leave the flag out for the daemon block's workers, default 2)", errUsage, o.Workers)
	}
	if o.PolicyDir == "" || len(pos) != 0 {
		return o, fmt.Errorf("%w: run needs --policies DIR and no arguments (usage: compactord run %s)", errUsage, commandSynopsis("run"))
	}
	return o, nil
}

// runDaemon is `compactord run`: it loads the policies, schedules the tables
// and serves HTTP until SIGTERM/SIGINT (ctx). SIGUSR1 runs every enabled
// table now; SIGHUP reloads the policy directory.
func runDaemon(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseDaemonFlags(ctx, args, stderr)
	if err != nil {
		return err
	}
	log := newLogger(stderr, o.LogFormat, o.LogLevel)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGHUP)
	defer signal.Stop(sigs)
	d, err := newDaemon(o, log, func(dc policies.Daemon) backend { return newDeltaBackend(log, dc, o.Store) })
	if err != nil {
		return err
	}
	return d.serve(ctx, sigs, nil)
}

// backend is what the daemon does to tables; the real one works on Delta
// tables, tests and the demo may wrap it.
type backend struct {
	// Run runs one operation of a table.
	Run scheduler.RunFunc[policies.Policy]
	// Spec is the scheduler's view of a policy (nil: runner.SpecOf with
	// one unnamed operation).
	Spec func(policies.Policy) (scheduler.Spec, error)
	// Poll checks a table for new log entries.
	Poll scheduler.PollFunc[policies.Policy]
	// Plan is a dry run with the real planner; the result is JSON-encoded.
	Plan func(ctx context.Context, p policies.Policy, exclude map[string]bool) (any, error)
	// Retain is told the current policies after each (re)load so the
	// backend can release handles of removed tables. May be nil.
	Retain func(ps []policies.Policy)
	// Inspect reports on a table as `compactord inspect` does (the web
	// view's charts). May be nil.
	Inspect func(ctx context.Context, p policies.Policy) (*inspectReport, error)
	// Close releases the backend. May be nil.
	Close func() error
	// Quarantine keeps the tables' quarantine lists across restarts
	// (runner.Backend.QuarantineStore). May be nil: in memory only.
	Quarantine scheduler.QuarantineStore[policies.Policy]
	// Halts keeps the tables' halts across restarts and between replicas
	// (runner.Backend.HaltStore). May be nil: in memory only.
	Halts scheduler.HaltStore[policies.Policy]
}

// daemon is one running `compactord run`.
type daemon struct {
	opts    daemonOptions
	log     hclog.Logger
	be      backend
	sched   *scheduler.Scheduler[policies.Policy]
	daemon  policies.Daemon
	started time.Time

	// token is the bearer token of --http-token-file ("" when none).
	token string
	// hosts are the names of --http-allowed-host, canonical (hostName).
	hosts map[string]bool
	// hist is the web view's in-memory history; pages its templates.
	hist  *history
	pages *webPages
	// reloadMu serializes reloads (SIGHUP and POST /reload).
	reloadMu sync.Mutex

	stopping atomic.Bool
	mu       sync.Mutex // guards the fields below
	set      *policies.Set
	reloaded time.Time
	loadErr  string
	counters daemonCounters
}

// newDaemon loads the policies once (an error here fails startup) and
// creates the backend and the scheduler with the daemon settings.
func newDaemon(o daemonOptions, log hclog.Logger, mkBackend func(policies.Daemon) backend) (*daemon, error) {
	set, err := loadPolicyDir("--policies", o.PolicyDir)
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
		if token, err = readTokenFile(o.HTTPTokenFile); err != nil {
			return nil, err
		}
	}
	hosts, err := allowedHosts(o.HTTPAllowedHosts)
	if err != nil {
		return nil, err
	}
	pages, err := parseWebPages()
	if err != nil {
		return nil, err
	}
	be := mkBackend(dc)
	d := &daemon{opts: o, log: log, be: be, daemon: dc, started: time.Now(), set: set, reloaded: time.Now(), token: token,
		hosts: hosts, hist: newHistory(), pages: pages}
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
		PollInterval: dc.Poll,
		BackoffBase:  dc.BackoffBase,
		BackoffMax:   dc.BackoffMax,
		Logger:       log.Named("scheduler"),
		Clock:        o.clock,
		Quarantine:   be.Quarantine,
		Halts:        be.Halts,

		ProgressLogInterval: o.progressInterval,
	})
	return d, nil
}

// logPolicyWarnings logs what the policy directory has that does not stop
// the daemon (an empty directory, a schedule that never fires).
func logPolicyWarnings(log hclog.Logger, set *policies.Set) {
	for _, w := range set.Warnings {
		log.Warn("policy warning", "warning", policies.FormatDiagnostic(w))
	}
}

// start applies the loaded policies to the scheduler.
func (d *daemon) start() {
	d.mu.Lock()
	ps := d.set.Tables
	d.mu.Unlock()
	if d.be.Retain != nil {
		d.be.Retain(ps)
	}
	added, _, _ := d.sched.Apply(ps)
	d.log.Info("daemon started", "policies", d.opts.PolicyDir, "tables", len(ps), "added", added,
		"workers", d.daemon.Workers, "poll", d.daemon.Poll, "replica", d.daemon.Replica)
}

// reload re-reads the policy directory. A bad directory keeps the previous
// policies running and is reported in /status and the reload metric.
func (d *daemon) reload() error {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	set, err := loadPolicyDir("--policies", d.opts.PolicyDir)
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
	if set.Daemon != d.set.Daemon {
		d.log.Warn("daemon block changed; its settings apply at the next restart")
	}
	d.set = set
	d.mu.Unlock()
	added, removed, changed := d.sched.Apply(set.Tables)
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

// serve runs until ctx ends, then shuts down within the shutdown timeout.
// ln, when non-nil, is used instead of listening on the configured address.
func (d *daemon) serve(ctx context.Context, sigs <-chan os.Signal, ln net.Listener) error {
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
		loopback := isLoopback(ln.Addr())
		srv = &http.Server{Handler: d.handler(loopback), ReadHeaderTimeout: 10 * time.Second}
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
	go d.sampleHistory(sctx, historySamplePeriod)

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
				_ = d.reload()
			}
			continue
		case <-ctx.Done():
		}
		break
	}

	d.stopping.Store(true)
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
