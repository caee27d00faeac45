package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/compactord/compactord/internal/daemon"
	"github.com/compactord/compactord/internal/logging"

	"github.com/compactord/compactord/internal/redact"
	"github.com/compactord/compactord/policies"
	"github.com/hashicorp/go-hclog"
)

// runCheck validates a policy directory and prints the effective policies.
func runCheck(ctx context.Context, fs *commandFlags, args []string, stdout, stderr io.Writer) error {
	asJSON := fs.Bool("json", false, "print the effective policies as JSON instead of HCL")
	showSecrets := fs.Bool("show-secrets", false, "print table URLs with their credentials (default: userinfo and credential parameters REDACTED)")
	dir, err := fs.parseOne(args, "policy directory")
	if err != nil {
		return err
	}
	set, err := daemon.LoadPolicyDir("check", dir)
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

// runFlags are the flags of `compactord run`: the daemon's options and the
// binary's own (logging, stores).
type runFlags struct {
	daemon.Options
	LogFormat string
	LogLevel  string
	// Store is the object-store deadlines and retries of every table.
	Store *storeFlags
}

// daemonOptions and backend are the daemon package's, under the names the
// commands and tests use.
type (
	daemonOptions = daemon.Options
	backend       = daemon.Backend
)

// newDaemon is daemon.New with this binary's version.
func newDaemon(o daemonOptions, log hclog.Logger, mkBackend func(policies.Daemon) backend) (*daemon.Daemon, error) {
	o.Version = version
	return daemon.New(o, log, mkBackend)
}

// parseDaemonFlags registers the flags of `compactord run` on fs and parses
// args.
func parseDaemonFlags(fs *commandFlags, args []string) (runFlags, error) {
	var o runFlags
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
func runDaemon(ctx context.Context, fs *commandFlags, args []string, stdout, stderr io.Writer) error {
	o, err := parseDaemonFlags(fs, args)
	if err != nil {
		return err
	}
	log := logging.New(stderr, o.LogFormat, o.LogLevel)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGHUP)
	defer signal.Stop(sigs)
	d, err := newDaemon(o.Options, log, func(dc policies.Daemon) backend { return newDeltaBackend(log, dc, o.Store) })
	if err != nil {
		return err
	}
	return d.Serve(ctx, sigs, nil)
}
