package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/progressbar"
	"github.com/compactord/compactord/internal/units"
	"github.com/compactord/compactord/vacuum"
)

// vacuumReport is `compactord vacuum --json`: the result and, on a dry
// run, the files that would be deleted.
type vacuumReport struct {
	*vacuum.Result
	Files []vacuum.File `json:"files,omitempty"`
	// Checkpoint is the checkpoint step after the VACUUM START and END
	// commits.
	Checkpoint *checkpointStep `json:"checkpoint,omitempty"`
}

func runVacuum(ctx context.Context, fs *commandFlags, args []string, stdout, stderr io.Writer) error {
	mode := fs.String("mode", "full", "lite (expired tombstones from the log, no data listing) or full (list the table)")
	retention := fs.String("retention", "", "keep files newer than this (default: delta.deletedFileRetentionDuration, 7 days); e.g. 168h, 7d, \"interval 7 days\"")
	force := fs.Bool("force-retention", false, "allow a retention shorter than the table's (files concurrent writers or time travel need may go)")
	dryRun := fs.Bool("dry-run", false, "list the files and bytes that would be deleted; delete nothing")
	concurrency := fs.countVar("concurrency", 16, "deletes in flight")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	ckpt := checkpointFlag(fs)
	ctx, url, store, err := fs.parseTable(ctx, args, stderr)
	if err != nil {
		return err
	}
	m, err := vacuum.ParseMode(*mode)
	if err != nil {
		return fmt.Errorf("%w: --mode: %v", errUsage, err)
	}
	// Warnings (the forced retention's among them) show at the default
	// log level.
	log := fs.logger(stderr)
	opts := vacuum.Options{Mode: m, ForceRetention: *force, DryRun: *dryRun, Concurrency: *concurrency,
		EngineInfo: "compactord/" + version, Logger: log}
	if *retention != "" {
		d, err := vacuum.ParseRetention(*retention)
		if err != nil {
			return fmt.Errorf("%w: --retention: %v", errUsage, err)
		}
		opts.Retention, opts.ZeroRetention = d, d == 0
	}
	var files []vacuum.File
	if *dryRun {
		opts.OnFile = func(f vacuum.File) {
			if *asJSON {
				files = append(files, f)
				return
			}
			fmt.Fprintf(stdout, "%s\t%s\t%s\n", f.Key, units.FormatBytes(f.Size), f.Kind)
		}
	}
	run := func(t *delta.Table) (vacuumReport, error) {
		if !*dryRun {
			// (A dry run prints its files on stdout as it finds them.)
			bar := progressbar.New(stdout, stderr, *asJSON, log)
			defer bar.Finish()
			opts.Progress = bar.Func()
		}
		res, err := vacuum.Run(ctx, t, opts)
		rep := vacuumReport{Result: res, Files: files}
		if res != nil {
			rep.Checkpoint = checkpointAfterCommits(ctx, t, log, *ckpt, res.StartVersion >= 0 || res.EndVersion >= 0)
		}
		return rep, err
	}
	return runOnTable(ctx, store.open, url, run, *asJSON, stdout, printVacuum)
}

// printVacuum is the text report of `compactord vacuum` (a dry run printed
// its files as it found them).
func printVacuum(stdout io.Writer, rep vacuumReport) {
	res := rep.Result
	if res.DryRun {
		fmt.Fprintf(stdout, "dry run (%s): would delete %d files, %s (%d orphans, %d temp files) older than %s\n",
			res.Mode, res.FilesToDelete, units.FormatBytes(res.BytesToDelete), res.Orphans, res.TempFiles, res.Cutoff.Format("2006-01-02T15:04:05Z"))
		printProtected(stdout, res)
		if res.DeletesRefused > 0 {
			fmt.Fprintf(stdout, "  would refuse to delete %d files the log named (the log, compactord's records, outside the table, or through a symbolic link): see the warnings\n", res.DeletesRefused)
		}
		return
	}
	fmt.Fprintf(stdout, "vacuum (%s) of %s at version %d: deleted %d files, %s, %d empty directories (%d orphans, %d temp files); cutoff %s\n",
		res.Mode, res.Table, res.ReadVersion, res.FilesDeleted, units.FormatBytes(res.BytesDeleted), res.DirsDeleted, res.Orphans, res.TempFiles,
		res.Cutoff.Format("2006-01-02T15:04:05Z"))
	printProtected(stdout, res)
	if res.DeletesRefused > 0 {
		fmt.Fprintf(stdout, "  refused to delete %d files the log named (the log, compactord's records, outside the table, or through a symbolic link): see the warnings\n", res.DeletesRefused)
	}
	if res.StartVersion >= 0 {
		fmt.Fprintf(stdout, "  committed VACUUM START at version %d, VACUUM END at %d\n", res.StartVersion, res.EndVersion)
	}
	rep.Checkpoint.print(stdout)
}

// printProtected says which removed files the retention still keeps, and
// until when: why a vacuum deleted fewer files than a compaction removed.
func printProtected(stdout io.Writer, res *vacuum.Result) {
	if res.ProtectedFiles == 0 || res.ProtectedUntil == nil {
		return
	}
	retention := units.FormatDuration(time.Duration(res.RetentionMillis) * time.Millisecond)
	if res.ProtectedUnreferenced == 0 {
		fmt.Fprintf(stdout, "  %s protected until %s (removed inside the %s retention; a later vacuum deletes them)\n",
			plural(res.ProtectedFiles, "removed file"), res.ProtectedUntil.Format("2006-01-02T15:04:05Z"), retention)
		return
	}
	fmt.Fprintf(stdout, "  %s protected until %s (%d removed inside the %s retention, %d that no version needs but modified inside it; a later vacuum deletes them)\n",
		plural(res.ProtectedFiles, "file"), res.ProtectedUntil.Format("2006-01-02T15:04:05Z"),
		res.ProtectedFiles-res.ProtectedUnreferenced, retention, res.ProtectedUnreferenced)
}
