package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/inspect"
	"github.com/compactord/compactord/internal/progressbar"
	"github.com/compactord/compactord/internal/units"
	"github.com/compactord/compactord/retention"
)

func runExpire(ctx context.Context, fs *commandFlags, args []string, stdout, stderr io.Writer) error {
	column := fs.String("column", "", "date, timestamp or timestamp_ntz column to expire by (logical name); an integer column needs --epoch-unit")
	epochUnit := fs.String("epoch-unit", "", "unit of an integer --column: days, seconds, milliseconds or microseconds since 1970-01-01")
	before := fs.String("before", "", "cutoff: rows with column < VALUE are deleted; a date 2021-03-01 or a timestamp 2021-03-01T12:00:00Z (for an integer column also a number in --epoch-unit)")
	dryRun := fs.Bool("dry-run", false, "report the rows and files that would be deleted, per partition, and commit nothing")
	olderThan := fs.String("older-than", "", "cutoff relative to now, e.g. 90d (instead of --before)")
	noSkip := fs.Bool("no-data-skipping", false, "turn conflict-time data skipping off")
	zone := fs.String("time-zone", "UTC", "zone of zone-less timestamp partition values (the writer's session zone)")
	staleAfter := fs.String("attempt-stale-after", "", attemptStaleAfterUsage)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	ckpt := checkpointFlag(fs)
	store := fs.addStoreFlags(stderr)
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if err := expireArgsError(len(pos), *column, *before, *olderThan); err != nil {
		return fmt.Errorf("%w: %v (usage: compactord expire URL --column C (--before VALUE | --older-than 90d) [--epoch-unit U] [--dry-run] [--time-zone ZONE] [--attempt-stale-after 1h] [--json])", errUsage, err)
	}
	stale, err := parseAttemptStaleAfter(*staleAfter)
	if err != nil {
		return err
	}
	loc, err := time.LoadLocation(*zone)
	if err != nil {
		return fmt.Errorf("%w: --time-zone: %v", errUsage, err)
	}
	opts := retention.Options{Column: *column, EpochUnit: *epochUnit, Before: *before, DryRun: *dryRun, TimeZone: loc, DisableDataSkipping: *noSkip,
		AttemptStaleAfter: stale, Logger: fs.logger(stderr)}
	if *olderThan != "" {
		d, err := units.ParseDuration(*olderThan)
		if err != nil {
			return fmt.Errorf("%w: --older-than: %v", errUsage, err)
		}
		opts.OlderThan = d
	}
	// One retry budget for the run, the table's open included, as the
	// daemon's and the other one-table commands' (parseTable).
	ctx = store.run(ctx)
	expire := func(t *delta.Table) (expireReport, error) {
		bar := progressbar.New(stdout, stderr, *asJSON, opts.Logger)
		opts.Progress = bar.Func()
		res, err := retention.Expire(ctx, t, opts)
		bar.Finish()
		rep := expireReport{Result: res}
		if res != nil {
			rep.Checkpoint = checkpointAfterCommits(ctx, t, opts.Logger, *ckpt, res.CommittedVersion >= 0)
		}
		return rep, err
	}
	return runOnTable(ctx, store.open, pos[0], expire, *asJSON, stdout, func(w io.Writer, rep expireReport) {
		printExpire(w, pos[0], rep.Result)
		rep.Checkpoint.print(w)
	})
}

// expireReport is `compactord expire --json`: the result and the
// checkpoint step after its commit.
type expireReport struct {
	*retention.Result
	Checkpoint *checkpointStep `json:"checkpoint,omitempty"`
}

// expireArgsError says what is wrong with expire's arguments: the table
// URL, the column and exactly one cutoff are required.
func expireArgsError(urls int, column, before, olderThan string) error {
	var errs []string
	switch {
	case urls == 0:
		errs = append(errs, "give the table URL")
	case urls > 1:
		errs = append(errs, fmt.Sprintf("give one table URL, not %d arguments", urls))
	}
	if column == "" {
		errs = append(errs, "--column is required: the date or timestamp column whose old rows are deleted")
	}
	switch {
	case before != "" && olderThan != "":
		errs = append(errs, "give --before or --older-than, not both: --before is a fixed cutoff (2021-03-01), --older-than one relative to now (90d)")
	case before == "" && olderThan == "":
		errs = append(errs, "give the cutoff: --before VALUE (e.g. 2021-03-01) or --older-than AGE (e.g. 90d)")
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.New(strings.Join(errs, "; "))
}

// printExpire is the text report of `compactord expire` on the table at url.
func printExpire(stdout io.Writer, url string, res *retention.Result) {
	if res.DryRun {
		// res.FilesRemoved counts rewritten files too (Spark's
		// numRemovedFiles); the lines below split it as the partitions do,
		// so that they add up.
		rewritten := 0
		for _, p := range res.Partitions {
			rewritten += p.FilesRewritten
		}
		fmt.Fprintf(stdout, "dry run at version %d, nothing committed: would delete %d rows where %s\n", res.ReadVersion, res.RowsDeleted, res.Predicate)
		fmt.Fprintf(stdout, "  files removed %d (%d wholly expired, %d rewritten), files with a new deletion vector %d, files added %d\n",
			res.FilesRemoved, res.FilesRemoved-rewritten, rewritten, res.FilesWithNewDV, res.FilesAdded)
		for _, p := range res.Partitions {
			name := inspect.ShowNulls(p.Partition)
			if name == "" {
				name = "(unpartitioned)"
			}
			fmt.Fprintf(stdout, "  %s: %s; %s removed (%d wholly expired, %d rewritten), %d with a new deletion vector\n",
				name, plural(p.Rows, "row"), plural(p.FilesRemoved+p.FilesRewritten, "file"), p.FilesRemoved, p.FilesRewritten, p.FilesWithNewDV)
		}
		return
	}
	if res.CommittedVersion < 0 {
		fmt.Fprintf(stdout, "nothing expired on %s (%s)\n", url, res.Predicate)
		printSwept(stdout, res.SweptAttempts, res.SweptObjects)
		return
	}
	fmt.Fprintf(stdout, "committed version %d: deleted %d rows where %s\n", res.CommittedVersion, res.RowsDeleted, res.Predicate)
	fmt.Fprintf(stdout, "  files removed %d, files with a new deletion vector %d, files added %d, attempts %d\n",
		res.FilesRemoved, res.FilesWithNewDV, res.FilesAdded, res.Attempts)
	kinds := make([]string, 0, len(res.Conflicts))
	for k := range res.Conflicts {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(stdout, "  conflicts %s: %d\n", k, res.Conflicts[k])
	}
	printSwept(stdout, res.SweptAttempts, res.SweptObjects)
}
