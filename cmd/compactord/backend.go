package main

import (
	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/daemon"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/runner"
)

// newDeltaBackend wires the daemon to Delta tables: polls and runs go
// through runner.Backend (the same Compact and PlanTable the CLI
// uses).
// With a replica name, every run holds the table's lease.
func newDeltaBackend(log hclog.Logger, dc policies.Daemon, sf *storeFlags) backend {
	return daemon.RunnerBackend(newRunner(log, dc, sf))
}

// newRunner is the daemon's runner.Backend: its tables opened, and its
// fanned-out workers started, with the store flags sf (nil: defaults).
func newRunner(log hclog.Logger, dc policies.Daemon, sf *storeFlags) *runner.Backend {
	opts, budget := delta.OpenOptions{}, 0
	if sf != nil {
		opts, budget = sf.openOptions(), sf.budget
	}
	// The DynamoDB log store's warnings (a commit left for the next reader
	// to publish, a writer outside the DynamoDB table).
	opts.Logger = log.Named("logstore")
	// The fleet's tables of one bucket share one store client.
	opts.Buckets = delta.NewBucketPool()
	tables := runner.NewTablesWith(opts)
	return &runner.Backend{
		Tables: tables,
		// A run's start sweeps the attempts of killed runs past the
		// daemon block's window (compaction and retention alike).
		Options:     compaction.RunOptions{AttemptStaleAfter: dc.AttemptStaleAfter},
		RetryBudget: budget,
		Logger:      log.Named("run"),
		EngineInfo:  "compactord/" + version,
		LeaseHolder: dc.Replica,
		LeaseTTL:    dc.LeaseTTL,
		Launchers:   daemonLaunchers(log, sf.workerArgs()),
	}
}
