package checkpoint

import (
	"context"
	"fmt"
	"strings"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/checkpointwrite"
	"github.com/compactord/compactord/internal/units"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/tableop"
)

// Name is the checkpoint operation's name in reports and metrics.
const Name = "checkpoint"

// Counts (tableop.Result.Counts) a checkpoint run reports.
const (
	// CountWritten and CountFailed are the checkpoints written and the
	// ones that failed (retried by the next run).
	CountWritten = "checkpoints_written"
	CountFailed  = "checkpoints_failed"
	// CountDurationMillis is the time spent writing them, in ms.
	CountDurationMillis = "checkpoint_duration_ms"
	// CountHintRepaired is 1 when the run rewrote a _last_checkpoint that
	// named an older checkpoint than the newest (or was missing).
	CountHintRepaired = "last_checkpoint_repaired"
)

// Factory returns the checkpoint operation's factory: after the table's
// commits of the run, a policy whose checkpoint block is enabled (the
// default) gets Maintain. The commits that are ours are those whose
// engineInfo names the product of env.EngineInfo ("compactord/0.1.0" ->
// "compactord").
func Factory() tableop.Factory[policies.Policy, *delta.Table] {
	return tableop.Factory[policies.Policy, *delta.Table]{Name: Name, New: func(p policies.Policy, env tableop.Env) (tableop.Op[*delta.Table], bool, error) {
		if !p.Checkpoint.Enabled {
			return nil, false, nil
		}
		engine, _, _ := strings.Cut(env.EngineInfo, "/")
		return &Op{Options: MaintainOptions{
			Options: Options{Now: env.Now, MaxBehind: int64(p.Checkpoint.MaxBehind), Logger: env.LoggerOr().Named(Name),
				Delta: checkpointwrite.CheckpointOptions{Progress: env.Progress}},
			Engine:    engine,
			NoCatchUp: !p.Checkpoint.CatchUp,
		}}, true, nil
	}}
}

// Op is the daemon's checkpoint pass over one table for one run.
type Op struct {
	Options MaintainOptions
}

var _ tableop.Op[*delta.Table] = (*Op)(nil)

// Name implements tableop.Op.
func (*Op) Name() string { return Name }

// Run implements tableop.Op. A checkpoint that fails is logged and counted
// and does not fail the run: the commits before it stand, and the next
// run retries it.
func (o *Op) Run(ctx context.Context, t *delta.Table) (tableop.Result, error) {
	log := o.Options.logger()
	res, err := Maintain(ctx, t, o.Options)
	out := tableop.Result{Counts: map[string]int64{}}
	if res != nil {
		out.Counts[CountWritten] = int64(len(res.Written))
		out.Counts[CountFailed] = int64(len(res.Failed))
		out.Counts[CountDurationMillis] = res.Duration.Milliseconds()
		if res.Repaired != nil {
			out.Counts[CountHintRepaired] = 1
		}
		for _, w := range res.Written {
			out.Done = append(out.Done, fmt.Sprintf("checkpoint of version %d written (%s)", w.Version, units.FormatBytes(w.SizeInBytes)))
		}
		if r := res.Repaired; r != nil {
			out.Done = append(out.Done, fmt.Sprintf("_last_checkpoint repaired to name version %d", r.Version))
		}
		for _, f := range res.Failed {
			log.Error("checkpoint failed; the next run retries it", "table", t.URL, "error", f)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return out, err
		}
		out.Counts[CountFailed]++
		log.Error("checkpoint pass failed; the next run retries it", "table", t.URL, "error", err)
	}
	return out, nil
}
