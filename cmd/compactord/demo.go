package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/units"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/runner"
	"github.com/compactord/compactord/scheduler"
)

// demoPolicy is the policy the demo runs with (also examples/binpack.hcl's
// shape): small tables, no settle window so freshly written files count.
const demoPolicy = `# Written by "compactord demo".
table "events" {
  url           = %q
  strategy      = "auto"
  settle_window = "0s"

  triggers {
    small_files = 10
  }
}
`

// demoOptions are the flags of `compactord demo`.
type demoOptions struct {
	dir         string
	commits     int
	filesPer    int
	rowsPerFile int64
	deleteMod   int64
	keep        bool
	logLevel    string
}

// runDemo builds a table of many small files, starts the daemon loop on it
// in-process, races a deletion-vector DELETE against the compaction (the
// DELETE commits right before the compaction's put-if-absent, so the
// compaction always loses that race and must reconcile), and prints
// before/after.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o demoOptions
	// The report is stdout; the daemon's info lines would interleave with it on a
	// terminal, so they show only with --log-level info (or -v).
	fs := newCommandFlags(ctx, "demo", "warn", stderr)
	fs.StringVar(&o.dir, "dir", "", "directory for the demo table and policy (default: a temp dir, removed afterwards unless --keep)")
	fs.IntVar(&o.commits, "commits", 12, "append commits to write")
	fs.IntVar(&o.filesPer, "files-per-commit", 4, "files per append commit")
	fs.Int64Var(&o.rowsPerFile, "rows", 250, "rows per file")
	fs.Int64Var(&o.deleteMod, "delete-every", 10, "the racing DELETE removes rows whose id % N == 3")
	fs.BoolVar(&o.keep, "keep", false, "keep the temp dir")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	o.logLevel = fs.logLevel
	if len(pos) != 0 || o.commits < 1 || o.filesPer < 1 || o.rowsPerFile < 1 || o.deleteMod < 4 {
		return fmt.Errorf("%w: demo takes only flags; counts must be positive and --delete-every at least 4", errUsage)
	}
	if o.dir == "" {
		d, err := os.MkdirTemp("", "compactord-demo-")
		if err != nil {
			return err
		}
		o.dir = d
		if !o.keep {
			defer os.RemoveAll(d)
		}
	}
	abs, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	o.dir = abs
	return demo(ctx, o, stdout, fs.logger(stderr))
}

func demo(ctx context.Context, o demoOptions, stdout io.Writer, log hclog.Logger) error {
	tableDir := filepath.Join(o.dir, "events")
	policyDir := filepath.Join(o.dir, "policies")
	if _, err := os.Stat(tableDir); err == nil {
		return fmt.Errorf("%s already exists; pick an empty --dir", tableDir)
	}
	for _, d := range []string{tableDir, policyDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	url := "file://" + tableDir
	if err := os.WriteFile(filepath.Join(policyDir, "events.hcl"), []byte(fmt.Sprintf(demoPolicy, url)), 0o644); err != nil {
		return err
	}
	t, err := delta.OpenTable(ctx, url)
	if err != nil {
		return err
	}
	defer t.Close()

	// 1. An ingestion job writes many small files.
	now := time.Now()
	if err := createDemoTable(ctx, t, now); err != nil {
		return err
	}
	var nextID int64
	for c := 0; c < o.commits; c++ {
		if _, err := appendDemo(ctx, t, o.filesPer, o.rowsPerFile, nextID, now); err != nil {
			return err
		}
		nextID += int64(o.filesPer) * o.rowsPerFile
	}
	before, _, err := summarize(ctx, t)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "compactord demo\n  table   %s\n  policy  %s\n\n", url, filepath.Join(policyDir, "events.hcl"))
	fmt.Fprintf(stdout, "wrote %d small files in %d append commits (%d rows)\n", before.Files, o.commits, before.Rows)

	// 2. The race: right before the compaction writes its commit, a DELETE
	// (deletion vectors, like Spark's merge-on-read DELETE) commits first.
	var (
		once     sync.Once
		deleted  *commit.DMLOutcome
		raceErr  error
		isTarget = func(id int64) bool { return id%o.deleteMod == 3 }
	)
	hook := func(hctx context.Context, v int64) error {
		once.Do(func() {
			deleted, raceErr = deleteDemo(hctx, t, nil, isTarget)
			if raceErr == nil {
				fmt.Fprintf(stdout, "race: a DELETE of %d rows (id %% %d == 3) committed version %d while the compaction was about to commit version %d\n",
					deleted.RowsDeleted, o.deleteMod, deleted.Version, v)
			}
		})
		return nil
	}
	be := deltaBackend(&runner.Backend{
		Tables:     runner.NewTables(),
		Logger:     log.Named("run"),
		EngineInfo: "compactord/" + version,
		Options: compaction.RunOptions{Commit: commit.CompactionOptions{
			Options:         commit.Options{BeforePut: hook},
			InlineDVMaxRows: 0,
		}},
	})

	// 3. The daemon loop, in-process, with the example policy.
	d, err := newDaemon(daemonOptions{PolicyDir: policyDir, HTTP: "off", Poll: time.Second}, log,
		func(policies.Daemon) backend { return be })
	if err != nil {
		return err
	}
	dctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.serve(dctx, nil, nil) }()
	var last *scheduler.RunRecord
	deadline := time.Now().Add(2 * time.Minute)
	for last == nil {
		select {
		case <-ctx.Done():
			stop()
			<-done
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if st := d.sched.Status(); len(st) == 1 && st[0].LastRun != nil {
			last = st[0].LastRun
		}
		if time.Now().After(deadline) {
			stop()
			<-done
			return errors.New("demo: no compaction run within 2 minutes")
		}
	}
	stop()
	if err := <-done; err != nil {
		return err
	}
	if raceErr != nil {
		return fmt.Errorf("demo: the racing DELETE failed: %w", raceErr)
	}
	if last.Result != scheduler.ResultCommitted {
		return fmt.Errorf("demo: compaction run ended %s: %s", last.Result, last.Error)
	}
	rep := last.Report
	fmt.Fprintf(stdout, "compaction: read version %d, lost the race, reconciled %d source deletion vectors (%d rows) onto its output, committed version %d\n\n",
		rep.ReadVersion, rep.Counts[compaction.CountReconciliations], rep.Counts[compaction.CountReconciledRows], rep.Version)

	// 4. Before and after, from the table itself (every file scanned).
	after, ids, err := summarize(ctx, t)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%-22s %12s %12s\n", "", "before", "after")
	fmt.Fprintf(stdout, "%-22s %12d %12d\n", "version", before.Version, after.Version)
	fmt.Fprintf(stdout, "%-22s %12d %12d\n", "data files", before.Files, after.Files)
	fmt.Fprintf(stdout, "%-22s %12s %12s\n", "average file size", units.FormatBytes(before.avgSize()), units.FormatBytes(after.avgSize()))
	fmt.Fprintf(stdout, "%-22s %12d %12d\n", "live rows", before.Rows, after.Rows)
	fmt.Fprintf(stdout, "%-22s %12d %12d\n", "rows deleted by DVs", before.DeletedRows, after.DeletedRows)
	fmt.Fprintf(stdout, "%-22s %12d %12d\n\n", "deletions reconciled", 0, rep.Counts[compaction.CountReconciledRows])

	// 5. The content is exactly what the writers did: every appended id
	// except the deleted ones, once.
	var want []int64
	for id := int64(0); id < nextID; id++ {
		if !isTarget(id) {
			want = append(want, id)
		}
	}
	if err := sameIDs(want, ids); err != nil {
		return fmt.Errorf("demo: content check failed: %w", err)
	}
	fmt.Fprintf(stdout, "content check: OK, %d rows: each appended id exactly once, none of the %d deleted ids resurrected\n",
		len(ids), nextID-int64(len(want)))
	if o.keep {
		fmt.Fprintf(stdout, "kept %s\n", o.dir)
	}
	return nil
}

// sameIDs compares two sorted id lists and names the first difference.
func sameIDs(want, got []int64) error {
	for i := 0; i < len(want) || i < len(got); i++ {
		switch {
		case i >= len(got):
			return fmt.Errorf("id %d is missing (got %d rows, want %d)", want[i], len(got), len(want))
		case i >= len(want):
			return fmt.Errorf("unexpected id %d (got %d rows, want %d)", got[i], len(got), len(want))
		case want[i] != got[i]:
			return fmt.Errorf("at row %d: got id %d, want %d", i, got[i], want[i])
		}
	}
	return nil
}
