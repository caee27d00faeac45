package checkpoint

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/checkpointwrite"
	"github.com/compactord/compactord/internal/redact"
)

// maxOwnPerRun bounds how many of our own uncheckpointed commits one
// Maintain call checkpoints (the newest ones; older ones are superseded).
const maxOwnPerRun = 10

// MaintainOptions steer Maintain.
type MaintainOptions struct {
	Options
	// Engine is the product name in commitInfo.engineInfo of the commits
	// that are ours ("compactord": "compactord" or "compactord/<version>").
	Engine string
	// NoCatchUp turns the catch-up of other writers' commits off.
	NoCatchUp bool
	// MaxOwn bounds how many of our own uncheckpointed commits on
	// multiples one call checkpoints, the newest ones (0: 10). A one-shot
	// command sets 1: the newest multiple supersedes the older ones for
	// every reader, and the command's caller is waiting.
	MaxOwn int
}

// MaintainResult says what Maintain wrote and what failed.
type MaintainResult struct {
	// Written are the checkpoints written, oldest first.
	Written []*checkpointwrite.CheckpointInfo
	// Failed are the errors of checkpoints that could not be written (and
	// of a _last_checkpoint repair that failed).
	Failed []error
	// Repaired is set when _last_checkpoint named an older checkpoint than
	// the newest (or was missing or corrupt) and was rewritten.
	Repaired *checkpointwrite.LastCheckpointRepair
	// Duration is the time spent writing checkpoints.
	Duration time.Duration
}

// Maintain is the daemon's checkpoint pass over a table after its other
// operations ran: every version above the newest checkpoint that is a
// multiple of delta.checkpointInterval and whose commit is ours
// (commitInfo.engineInfo names Engine) gets a checkpoint, as Spark gives
// one to each of its own commits on such versions; a checkpoint that
// failed in an earlier run is retried this way, with no state kept. Then,
// unless NoCatchUp, CatchUp covers the commits of writers that never
// checkpoint. Last, a _last_checkpoint left behind the newest checkpoint
// (its writer's write of it failed) is repaired (checkpointwrite.RepairLastCheckpoint).
// A failed checkpoint or repair is reported in Failed and the pass goes
// on; only the context's end makes it return an error.
func Maintain(ctx context.Context, t *delta.Table, opts MaintainOptions) (*MaintainResult, error) {
	res := &MaintainResult{}
	l, err := delta.ListLog(ctx, t)
	if err != nil {
		return res, err
	}
	err = maintain(ctx, t, l, opts, res)
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if len(res.Written) > 0 || len(res.Failed) > 0 {
		// A checkpoint written here is not in l, and one whose
		// _last_checkpoint write failed is not in Written.
		l = nil
	}
	rep, rerr := checkpointwrite.RepairLastCheckpoint(ctx, t, l)
	if rerr != nil {
		res.Failed = append(res.Failed, fmt.Errorf("repair _last_checkpoint: %w", rerr))
	} else if rep != nil {
		res.Repaired = rep
		opts.logger().Info("_last_checkpoint repaired", "table", redact.URL(t.URL), "version", rep.Version, "was", rep.Was, "key", rep.Key)
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, err
}

func maintain(ctx context.Context, t *delta.Table, l *delta.LogListing, opts MaintainOptions, res *MaintainResult) error {
	latest, newest := l.LatestCommit(), l.NewestCheckpoint(1<<62-1)
	if latest <= 0 || newest == latest {
		return nil
	}
	snap, err := delta.LoadSnapshot(ctx, t, latest)
	if err != nil {
		return err
	}
	interval, err := intervalOf(t, snap)
	if err != nil {
		return err
	}
	engine := opts.Engine
	if engine == "" {
		engine = "compactord"
	}
	maxOwn := opts.MaxOwn
	if maxOwn <= 0 {
		maxOwn = maxOwnPerRun
	}
	var own []int64
	for m := latest - latest%interval; m > max(newest, 0) && len(own) < maxOwn; m -= interval {
		acts, err := delta.ReadCommit(ctx, t, m)
		if err != nil {
			res.Failed = append(res.Failed, err)
			continue
		}
		if ours(acts, engine) {
			own = append(own, m)
		}
	}
	for i := len(own) - 1; i >= 0; i-- {
		r := &Result{Table: t.URL, Latest: own[i], NewestBefore: -1}
		err := afterCommit(ctx, t, l, own[i], opts.Options, r)
		res.add(r, err)
		if err == nil && r.Checkpoint != nil {
			newest = max(newest, r.Checkpoint.Version)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if !opts.NoCatchUp {
		// The listing and the latest snapshot are still good: only the
		// checkpoints just written are new.
		r := &Result{Table: t.URL, Latest: latest, NewestBefore: newest}
		err := catchUp(ctx, t, l, snap, opts.Options, r)
		res.add(r, err)
	}
	return ctx.Err()
}

func (r *MaintainResult) add(res *Result, err error) {
	if err != nil {
		r.Failed = append(r.Failed, err)
	}
	if res == nil {
		return
	}
	r.Duration += res.Duration
	if res.Checkpoint != nil {
		r.Written = append(r.Written, res.Checkpoint)
	}
}

// ours reports whether a commit's commitInfo.engineInfo names engine.
func ours(acts []actions.Action, engine string) bool {
	for _, a := range acts {
		if a.CommitInfo != nil {
			e := a.CommitInfo.EngineInfo()
			return e == engine || strings.HasPrefix(e, engine+"/")
		}
	}
	return false
}
