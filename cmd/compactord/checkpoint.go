package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/compactord/compactord/checkpoint"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/checkpointwrite"
	"github.com/compactord/compactord/internal/progressbar"
	"github.com/compactord/compactord/internal/units"
	"github.com/compactord/compactord/logcleanup"
)

func runCheckpoint(ctx context.Context, fs *commandFlags, args []string, stdout, stderr io.Writer) error {
	ver := fs.versionVar("version `N` to checkpoint (default: the latest)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	ctx, url, store, err := fs.parseTable(ctx, args, stderr)
	if err != nil {
		return err
	}
	write := func(t *delta.Table) (*checkpoint.Result, error) {
		log := fs.logger(stderr)
		bar := progressbar.New(stdout, stderr, *asJSON, log)
		defer bar.Finish()
		return checkpoint.Write(ctx, t, *ver, checkpoint.Options{Logger: log, Delta: checkpointwrite.CheckpointOptions{Progress: bar.Func()}})
	}
	return runOnTable(ctx, store.open, url, write, *asJSON, stdout, printCheckpoint)
}

// printCheckpoint is the text report of `compactord checkpoint`.
func printCheckpoint(stdout io.Writer, res *checkpoint.Result) {
	if c := res.Checkpoint; c != nil {
		kind := "classic"
		if c.V2 {
			kind = fmt.Sprintf("V2 with %d sidecars", len(c.Sidecars))
		}
		fmt.Fprintf(stdout, "checkpoint of %s at version %d (%s): %s, %d actions (%d adds, %d tombstones kept, %d expired), %s, %s\n",
			res.Table, c.Version, kind, c.Key, c.Actions, c.NumAddFiles, c.Tombstones, c.Expired, units.FormatBytes(c.SizeInBytes), res.Duration.Round(time.Millisecond))
		return
	}
	fmt.Fprintf(stdout, "no checkpoint written: %s\n", res.Skipped)
}

func runCleanupLog(ctx context.Context, fs *commandFlags, args []string, stdout, stderr io.Writer) error {
	dryRun := fs.Bool("dry-run", false, "list what would be deleted; delete (and write) nothing")
	concurrency := fs.countVar("concurrency", logcleanup.DefaultConcurrency, "deletes in flight")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	ctx, url, store, err := fs.parseTable(ctx, args, stderr)
	if err != nil {
		return err
	}
	cleanup := func(t *delta.Table) (*logcleanup.Result, error) {
		return logcleanup.Cleanup(ctx, t, logcleanup.Options{DryRun: *dryRun, Concurrency: *concurrency, Logger: fs.logger(stderr)})
	}
	return runOnTable(ctx, store.open, url, cleanup, *asJSON, stdout, printCleanupLog)
}

// printCleanupLog is the text report of `compactord cleanup-log`.
func printCleanupLog(stdout io.Writer, res *logcleanup.Result) {
	verb := "deleted"
	if res.DryRun {
		verb = "would delete"
		for _, f := range res.Deleted {
			fmt.Fprintf(stdout, "%s\t%s\t%s\n", f.Key, units.FormatBytes(f.Size), f.Kind)
		}
	}
	if res.Skipped != "" {
		fmt.Fprintf(stdout, "log cleanup of %s: nothing to delete: %s\n", res.Table, res.Skipped)
		return
	}
	fmt.Fprintf(stdout, "log cleanup of %s: %s %d files, %s below checkpoint %d (cutoff %s, latest version %d)\n",
		res.Table, verb, len(res.Deleted), units.FormatBytes(res.BytesDeleted), res.Boundary, res.Cutoff.Format("2006-01-02T15:04:05Z"), res.Latest)
	if res.CompatCheckpoint != "" {
		fmt.Fprintf(stdout, "  wrote the V2 compatibility checkpoint %s first\n", res.CompatCheckpoint)
	}
}
