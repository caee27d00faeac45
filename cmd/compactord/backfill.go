package main

import (
	"context"
	"fmt"
	"io"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/statsbackfill"
)

func runBackfillStats(ctx context.Context, fs *commandFlags, args []string, stdout, stderr io.Writer) error {
	dryRun := fs.Bool("dry-run", false, "count the files that need statistics; compute and commit nothing")
	maxFiles := fs.countVar("max-files", 0, "backfill at most this many files (0: all)")
	concurrency := fs.countVar("concurrency", 4, "files read at once")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	ckpt := checkpointFlag(fs)
	ctx, url, store, err := fs.parseTable(ctx, args, stderr)
	if err != nil {
		return err
	}
	backfill := func(t *delta.Table) (backfillReport, error) {
		log := fs.logger(stderr)
		res, err := statsbackfill.Run(ctx, t, statsbackfill.Options{DryRun: *dryRun, MaxFiles: *maxFiles, Concurrency: *concurrency,
			EngineInfo: "compactord/" + version, Logger: log})
		rep := backfillReport{Result: res}
		if res != nil {
			rep.Checkpoint = checkpointAfterCommits(ctx, t, log, *ckpt, res.CommittedVersion >= 0)
		}
		return rep, err
	}
	return runOnTable(ctx, store.open, url, backfill, *asJSON, stdout, printBackfill)
}

// backfillReport is `compactord backfill-stats --json`: the result and the
// checkpoint step after its commit.
type backfillReport struct {
	*statsbackfill.Result
	Checkpoint *checkpointStep `json:"checkpoint,omitempty"`
}

// printBackfill is the text report of `compactord backfill-stats`.
func printBackfill(stdout io.Writer, rep backfillReport) {
	res := rep.Result
	defer rep.Checkpoint.print(stdout)
	fmt.Fprintf(stdout, "%s at version %d: %d files need statistics (%d without, %d with fewer indexed columns)\n",
		res.Table, res.ReadVersion, res.Candidates, res.NoStats, res.Partial)
	if res.CommittedVersion >= 0 {
		fmt.Fprintf(stdout, "committed COMPUTE STATS at version %d: %d files, %d rows\n", res.CommittedVersion, res.Backfilled, res.Rows)
	}
}
