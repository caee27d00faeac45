package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/progressbar"
	"github.com/compactord/compactord/internal/redact"
	"github.com/compactord/compactord/internal/units"
	"github.com/compactord/compactord/planner"
)

// planFile is the JSON `compactord plan --out` writes and `run-plan` reads:
// the planner's plan plus the table URL and the policy it was planned with.
type planFile struct {
	Table  string      `json:"table"`
	Policy *policyUsed `json:"policy,omitempty"`
	*planner.CompactionPlan
}

// planFlags are the planning flags shared by plan and compact.
type planFlags struct {
	strategy, target, minSize string
	full                      bool
	policies, table           string
	store                     *storeFlags
}

func (p *planFlags) register(fs *commandFlags, stderr io.Writer) {
	fs.StringVar(&p.strategy, "strategy", "auto", "auto | binpack | lightweight | zcube")
	fs.StringVar(&p.target, "target-file-size", "", "output file size, e.g. 128MiB (default: table property or 128MiB)")
	fs.StringVar(&p.minSize, "min-file-size", "", "files smaller than this are candidates, e.g. 64MiB (default 1GiB)")
	fs.BoolVar(&p.full, "full", false, "re-cluster every file (zcube)")
	fs.StringVar(&p.policies, "policies", "", "plan as the daemon would: with the policy of --table from this policy directory (its defaults and settle window included; the URL argument may then be omitted)")
	fs.StringVar(&p.table, "table", "", "the table block of --policies to plan with (default: the directory's only table)")
	p.store = fs.addStoreFlags(stderr)
}

func (p *planFlags) policy() (planner.Policy, error) {
	pol := planner.DefaultPolicy()
	pol.SettleWindow = 0
	pol.Strategy = planner.Strategy(p.strategy)
	pol.Full = p.full
	if p.target != "" {
		n, err := units.ParseSize(p.target)
		if err != nil {
			return pol, fmt.Errorf("%w: --target-file-size: %v", errUsage, err)
		}
		pol.TargetFileSize = n
	}
	if p.minSize != "" {
		n, err := units.ParseSize(p.minSize)
		if err != nil {
			return pol, fmt.Errorf("%w: --min-file-size: %v", errUsage, err)
		}
		pol.MinFileSize = n
	}
	if err := pol.Validate(); err != nil {
		return pol, fmt.Errorf("%w: %v", errUsage, err)
	}
	return pol, nil
}

// printWhy prints why a plan left files alone: one line per skip group
// (nothing when it left none), or that the table has no live files.
func printWhy(w io.Writer, label string, considered int, skipped []planner.Skip) {
	if considered == 0 && len(skipped) == 0 {
		fmt.Fprintf(w, "  %s: the table has no live data files\n", label)
	}
	for _, sk := range skipped {
		fmt.Fprintf(w, "  %s: %s\n", label, sk)
	}
}

func runPlan(ctx context.Context, fs *commandFlags, args []string, stdout, stderr io.Writer) error {
	var pf planFlags
	pf.register(fs, stderr)
	out := fs.String("out", "", "write the plan JSON to this file (default: stdout)")
	ps, err := pf.open(ctx, fs, args, func() hclog.Logger { return fs.logger(stderr) })
	if err != nil {
		return err
	}
	ctx = ps.ctx
	t := ps.table
	defer t.Close()
	pl, _, err := compaction.PlanTable(ctx, t, ps.opts)
	if err != nil {
		return err
	}
	file := planFile{Table: t.URL, Policy: ps.used, CompactionPlan: pl}
	if *out == "" || *out == "-" {
		return writeJSONTo(stdout, file)
	}
	f, err := os.Create(*out)
	if err != nil {
		return fmt.Errorf("write plan: %w", err)
	}
	if err := errors.Join(writeJSONTo(f, file), f.Close()); err != nil {
		return fmt.Errorf("write plan %s: %w", *out, err)
	}
	fmt.Fprintf(stdout, "planned %s on %s at version %d (%s) -> %s\n", plural(len(pl.Jobs), "job"), t.Name(), pl.ReadVersion, pl.Strategy, *out)
	label := "held back"
	if len(pl.Jobs) == 0 {
		label = "why"
	}
	printWhy(stdout, label, pl.Considered.Files, pl.Skipped)
	fmt.Fprintf(stdout, "  %s\n", ps.used)
	return nil
}

func runRunPlan(ctx context.Context, fs *commandFlags, args []string, stdout, stderr io.Writer) error {
	asJSON := fs.Bool("json", false, "print the result as JSON")
	table := fs.String("table", "", "table URL (default: the plan's)")
	ckpt := checkpointFlag(fs)
	var cf commitFlags
	cf.register(fs)
	store := fs.addStoreFlags(stderr)
	var ef executorFlags
	ef.register(fs, store)
	planPath, err := fs.parseOne(args, "plan file")
	if err != nil {
		return err
	}
	pos := []string{planPath}
	data, err := os.ReadFile(pos[0])
	if err != nil {
		return fmt.Errorf("read plan: %w", err)
	}
	pf := planFile{CompactionPlan: &planner.CompactionPlan{}}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(&pf); err != nil {
		return fmt.Errorf("plan %s: %w", pos[0], err)
	}
	url := pf.Table
	if *table != "" {
		url = *table
	}
	if url == "" {
		return fmt.Errorf("plan %s names no table (use --table)", pos[0])
	}
	for i, j := range pf.Jobs {
		if j == nil || len(j.SourcePaths) == 0 {
			return fmt.Errorf("plan %s: job %d has no sources", pos[0], i)
		}
	}
	ctx = store.run(ctx)
	t, err := store.open(ctx, url)
	if err != nil {
		return err
	}
	defer t.Close()
	log := fs.logger(stderr)
	opts := runOptions(log)
	if err := cf.apply(&opts); err != nil {
		return err
	}
	if err := ef.apply(ctx, &opts, log); err != nil {
		return err
	}
	bar := progressbar.New(stdout, stderr, *asJSON, log)
	opts.Progress = bar.Func()
	res, err := compaction.RunPlan(ctx, t, pf.CompactionPlan, opts)
	bar.Finish()
	step := checkpointAfterCommits(ctx, t, log, *ckpt, res != nil && res.CommittedVersion >= 0)
	return report(stdout, stderr, res, err, *asJSON, pf.Policy, step)
}

// commitFlags are the partial-progress flags of compact and run-plan; set,
// they override the policy's commit_every_jobs and commit_interval.
type commitFlags struct {
	every      int
	interval   string
	staleAfter string
}

func (c *commitFlags) register(fs *commandFlags) {
	fs.IntVar(&c.every, "commit-every-jobs", 0, "commit finished jobs in batches of this many as they finish (default: the policy's, else one commit at the end)")
	fs.StringVar(&c.interval, "commit-interval", "", "commit the jobs finished so far every this long, e.g. 5m (default: the policy's, else off)")
	fs.StringVar(&c.staleAfter, "attempt-stale-after", "", attemptStaleAfterUsage)
}

// attemptStaleAfterUsage is the help of --attempt-stale-after (compact,
// run-plan, expire).
const attemptStaleAfterUsage = "count a killed run's intent record as dead, and delete what it wrote and did not commit, once unmodified this long (default 1h; live runs rewrite theirs every minute)"

// parseAttemptStaleAfter is the value of --attempt-stale-after s: a positive
// duration, or 0 (the default) when s is empty.
func parseAttemptStaleAfter(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := units.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%w: --attempt-stale-after %q: want a positive duration", errUsage, s)
	}
	return d, nil
}

func (c *commitFlags) apply(o *compaction.RunOptions) error {
	if c.every < 0 {
		return fmt.Errorf("%w: --commit-every-jobs %d: want >= 0", errUsage, c.every)
	}
	if c.every > 0 {
		o.CommitEveryJobs = c.every
	}
	if c.interval != "" {
		d, err := units.ParseDuration(c.interval)
		if err != nil {
			return fmt.Errorf("%w: --commit-interval: %v", errUsage, err)
		}
		o.CommitInterval = d
	}
	d, err := parseAttemptStaleAfter(c.staleAfter)
	if err != nil {
		return err
	}
	if d > 0 {
		o.AttemptStaleAfter = d
	}
	return nil
}

// printSwept prints the line of a run's start sweep (compact, run-plan,
// expire), when it swept a dead attempt.
func printSwept(stdout io.Writer, attempts, objects int64) {
	if attempts > 0 {
		fmt.Fprintf(stdout, "  swept %d dead attempts: %d uncommitted objects deleted\n", attempts, objects)
	}
}

func runOptions(log hclog.Logger) compaction.RunOptions {
	o := compaction.RunOptions{EngineInfo: "compactord/" + version, Logger: log}
	o.Commit.BeforePut = testPauseCommit(os.Getenv(testPauseCommitEnv))
	return o
}

func runCompact(ctx context.Context, fs *commandFlags, args []string, stdout, stderr io.Writer) error {
	var pf planFlags
	pf.register(fs, stderr)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	ckpt := checkpointFlag(fs)
	var cf commitFlags
	cf.register(fs)
	ps, err := pf.open(ctx, fs, args, func() hclog.Logger { return fs.logger(stderr) })
	if err != nil {
		return err
	}
	defer ps.table.Close()
	ctx = ps.ctx
	if err := cf.apply(&ps.opts); err != nil {
		return err
	}
	bar := progressbar.New(stdout, stderr, *asJSON, ps.opts.Logger)
	ps.opts.Progress = bar.Func()
	res, err := compaction.Compact(ctx, ps.table, ps.opts)
	bar.Finish()
	step := checkpointAfterCommits(ctx, ps.table, ps.opts.Logger, *ckpt, res != nil && res.CommittedVersion >= 0)
	return report(stdout, stderr, res, err, *asJSON, ps.used, step)
}

// Run statuses of `compactord compact` and `run-plan` (the JSON "status").
const (
	statusCommitted = "committed"
	statusPartial   = "partial"
	statusNothing   = "nothing"
	statusFailed    = "failed"
)

// runStatus says what a run did: committed everything it planned, partial
// (committed some jobs, failed others with an error worth retrying),
// nothing (no job planned or all dropped), or failed.
func runStatus(res *compaction.RunResult, err error) string {
	switch {
	case res == nil:
		return statusFailed
	case res.CommittedVersion >= 0 && err == nil:
		return statusCommitted
	case res.CommittedVersion >= 0 && failure.Of(err) != failure.Halt:
		return statusPartial
	case err == nil:
		return statusNothing
	}
	return statusFailed
}

// report prints a run result (also a partial one that came with an error),
// the policy it planned with (nil: a plan file's, unknown) and the
// checkpoint step after its commits (nil: none ran). A partial run is a
// success of the command (exit 0) with status "partial"; what failed is
// printed on stderr. A failed checkpoint step changes neither.
func report(stdout, stderr io.Writer, res *compaction.RunResult, err error, asJSON bool, used *policyUsed, step *checkpointStep) error {
	// The result names the table by its URL, credentials and all.
	stdout, stderr = redact.Writer(stdout), redact.Writer(stderr)
	status := runStatus(res, err)
	if res != nil {
		if asJSON {
			merr := writeJSONTo(stdout, struct {
				Status string      `json:"status"`
				Policy *policyUsed `json:"policy,omitempty"`
				*compaction.RunResult
				Checkpoint *checkpointStep `json:"checkpoint,omitempty"`
			}{status, used, res, step})
			if merr != nil {
				return errors.Join(err, merr)
			}
		} else {
			if res.CommittedVersion >= 0 {
				// "committed version 5": the status is said once; a
				// partial run says so first.
				prefix := ""
				if status != statusCommitted {
					prefix = status + ": "
				}
				fmt.Fprintf(stdout, "%scommitted version %d (read %d): %s, %d files removed, %d added, %s read, %s written\n",
					prefix, res.CommittedVersion, res.ReadVersion, plural(res.JobsCommitted, "job"), res.FilesRemoved, res.FilesAdded,
					units.FormatBytes(res.BytesRead), units.FormatBytes(res.BytesWritten))
				if res.Commits > 1 {
					fmt.Fprintf(stdout, "  in %d commits: versions %v\n", res.Commits, res.CommittedVersions)
				}
			} else {
				fmt.Fprintf(stdout, "nothing committed (read version %d, %s planned)\n", res.ReadVersion, plural(res.JobsPlanned, "job"))
			}
			for _, r := range res.Reconciled {
				fmt.Fprintf(stdout, "  reconciled %d rows of %s deleted by version %d\n", r.RowsRemapped, r.Source, r.WinnerVersion)
			}
			for _, d := range res.Dropped {
				fmt.Fprintf(stdout, "  dropped job %s (%s): %s\n", d.JobID, d.Kind, d.Reason)
			}
			printSwept(stdout, res.SweptAttempts, res.SweptObjects)
			step.print(stdout)
			label := "held back"
			if res.JobsPlanned == 0 {
				label = "why"
			}
			printWhy(stdout, label, res.ConsideredFiles, res.Skipped)
			if used != nil {
				fmt.Fprintf(stdout, "  %s\n", used)
			}
		}
	}
	if status == statusPartial {
		fmt.Fprintf(stderr, "compactord: partial: %d of %s failed or were not committed and will be retried by the next run: %v\n", res.JobsFailed+res.JobsAbandoned, plural(res.JobsPlanned, "job"), err)
		return nil
	}
	return err
}
