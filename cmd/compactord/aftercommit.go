package main

import (
	"context"
	"fmt"
	"io"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/checkpoint"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/checkpointwrite"
	"github.com/compactord/compactord/internal/redact"
)

// checkpointStep is what a one-shot command (compact, run-plan, expire,
// vacuum, backfill-stats) did after its commits with --checkpoint (the
// default): the daemon's checkpoint pass, checkpoint.Maintain, without its
// catch-up of other writers and bounded to one checkpoint, that of the
// newest multiple of delta.checkpointInterval among compactord's commits
// since the newest checkpoint (a batched compaction landing several
// multiples gets its newest one: it supersedes the others for every
// reader), then the repair of a _last_checkpoint left behind. The JSON is
// the command's "checkpoint".
type checkpointStep struct {
	// Written are the checkpoints written.
	Written []*checkpointwrite.CheckpointInfo `json:"written,omitempty"`
	// Repaired is set when _last_checkpoint was rewritten.
	Repaired *checkpointwrite.LastCheckpointRepair `json:"lastCheckpointRepaired,omitempty"`
	// Errors are the step's failures. They never fail the command: its
	// commits stand, and the next run (or the daemon) retries.
	Errors []string `json:"errors,omitempty"`
}

// checkpointFlag registers --checkpoint (on by default).
func checkpointFlag(fs *commandFlags) *bool {
	return fs.Bool("checkpoint", true, "after the command's commits, checkpoint the newest of them on a multiple of delta.checkpointInterval (and repair a stale _last_checkpoint) as the daemon does; a failed checkpoint is reported and never fails the command")
}

// checkpointAfterCommits runs the checkpoint step on t when on and the
// command committed; nil otherwise. Failures are logged at warn and kept
// in the step.
func checkpointAfterCommits(ctx context.Context, t *delta.Table, log hclog.Logger, on, committed bool) *checkpointStep {
	if !on || !committed || ctx.Err() != nil {
		return nil
	}
	res, err := checkpoint.Maintain(ctx, t, checkpoint.MaintainOptions{
		Options: checkpoint.Options{Logger: log}, Engine: "compactord", NoCatchUp: true, MaxOwn: 1})
	step := &checkpointStep{}
	var failed []error
	if res != nil {
		step.Written, step.Repaired, failed = res.Written, res.Repaired, res.Failed
	}
	if err != nil {
		failed = append(failed, err)
	}
	for _, f := range failed {
		log.Warn("checkpoint after the commit failed; the commit stands and the next run retries it", "table", redact.URL(t.URL), "error", f)
		step.Errors = append(step.Errors, redact.Error(f).Error())
	}
	return step
}

// print writes the step's lines of a command's text report.
func (s *checkpointStep) print(w io.Writer) {
	if s == nil {
		return
	}
	for _, c := range s.Written {
		fmt.Fprintf(w, "  checkpoint written at version %d: %s\n", c.Version, c.Key)
	}
	if r := s.Repaired; r != nil {
		was := "missing"
		if r.Was >= 0 {
			was = fmt.Sprintf("version %d", r.Was)
		}
		fmt.Fprintf(w, "  _last_checkpoint repaired: now version %d (was %s)\n", r.Version, was)
	}
	for _, e := range s.Errors {
		fmt.Fprintf(w, "  checkpoint failed (the commit stands; the next run retries it): %s\n", e)
	}
}
