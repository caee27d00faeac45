package commit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/writer"
)

// CompactionOptions tune a compaction commit.
type CompactionOptions struct {
	Options
	// InlineDVMaxRows: reconciled output DVs with at most this many rows are
	// written inline in the log instead of to a DV file (0: always a file).
	InlineDVMaxRows int
	// ClusterBy is operationParameters.clusterBy (a JSON array as a string;
	// default "[]").
	ClusterBy string
	// OperationParameters override the default operationParameters key by
	// key (the planner's, e.g. clusterBy and isFull).
	OperationParameters map[string]any
}

// Outcome reports a compaction commit.
type Outcome struct {
	// ReadVersion is the snapshot version the jobs were planned and written at.
	ReadVersion int64 `json:"readVersion"`
	// Version is the committed version, -1 when nothing was committed.
	Version int64 `json:"committedVersion"`
	// Committed are the results that went into the commit.
	Committed []*writer.Result `json:"-"`
	// Dropped are the jobs left out, with why.
	Dropped []DroppedJob `json:"dropped"`
	// Reconciled lists every winner DV remapped onto a committed output.
	Reconciled []Reconciliation `json:"reconciled"`
	// Conflicts counts winning commits' effects by kind.
	Conflicts map[string]int `json:"conflicts"`
	// FilesRemoved and FilesAdded count the committed remove/add actions.
	FilesRemoved int `json:"filesRemoved"`
	FilesAdded   int `json:"filesAdded"`
}

// CommitCompaction commits the written jobs as one OPTIMIZE commit against
// the read snapshot snap, at snapshot isolation. Winners that landed after
// snap are checked one by one: a winner that rewrote a source's deletion
// vector in place is reconciled by remapping its deletions onto our output;
// a winner that removed a source otherwise drops that source's job (only
// that job); a protocol or metadata change abandons the whole attempt
// (ErrMetadataChanged, class Retry). Outputs of dropped jobs, and of every
// job when the attempt is abandoned, are deleted at once.
//
// Reconciled results are only committed when all of a job's sources
// reconcile; the committed outcome is returned even when every job was
// dropped (Version -1).
func CommitCompaction(ctx context.Context, t *delta.Table, snap *delta.Snapshot, results []*writer.Result, opts CompactionOptions) (*Outcome, error) {
	o := opts.Options.withDefaults()
	out := &Outcome{ReadVersion: snap.Version, Version: -1}
	// Sorted jobs' origin maps are only needed while committing.
	defer func() {
		for _, r := range results {
			if r != nil {
				_ = r.Origins.Close()
			}
		}
	}()
	inlineMax := uint64(0)
	if opts.InlineDVMaxRows > 0 {
		inlineMax = uint64(opts.InlineDVMaxRows)
	}
	c, err := newCompaction(snap, results, tableDVs{t: t, inlineMax: inlineMax}, o.Now().UnixMilli())
	if err != nil {
		abortAll(ctx, t, results, o)
		return out, err
	}
	clusterBy := opts.ClusterBy
	if clusterBy == "" {
		clusterBy = "[]"
	}
	tx := &Txn{
		Table:     t,
		Snapshot:  snap,
		Operation: "OPTIMIZE",
		OperationParameters: map[string]any{
			"predicate": "[]",
			"auto":      false,
			"clusterBy": clusterBy,
			"zOrderBy":  "[]",
			"batchId":   "0",
		},
		IsolationLevel: "SnapshotIsolation",
		IsBlindAppend:  false,
		CommitTags:     map[string]string{"delta.rowTracking.preserved": "false"},
		Options:        o,
	}
	for k, v := range opts.OperationParameters {
		tx.OperationParameters[k] = v
	}
	p := &compactionParticipant{c: c, t: t, o: o, aborted: map[*jobState]bool{}}
	p.abortDropped(ctx)
	v, err := tx.run(ctx, p)
	out.Conflicts = c.conflicts
	out.Reconciled = c.reconciled
	for _, j := range c.jobs {
		if j.dropped != nil {
			out.Dropped = append(out.Dropped, *j.dropped)
		}
	}
	if err != nil {
		if !errors.Is(err, delta.ErrAmbiguous) {
			abortAll(ctx, t, results, o)
		}
		out.Reconciled = nil
		return out, err
	}
	p.abortDropped(ctx)
	if v < 0 {
		return out, nil
	}
	out.Version = v
	for _, j := range c.jobs {
		if j.dropped == nil {
			out.Committed = append(out.Committed, j.res)
			out.FilesRemoved += len(j.sources)
			out.FilesAdded += len(j.res.Outputs)
		}
	}
	// Keep only reconciliations of committed jobs.
	kept := out.Reconciled[:0]
	for _, r := range out.Reconciled {
		if ss := c.byPath[r.Source]; ss != nil && ss.job.dropped == nil {
			kept = append(kept, r)
		}
	}
	out.Reconciled = kept
	o.Logger.Info("compaction committed", "table", t.URL, "version", v, "readVersion", snap.Version,
		"jobs", len(out.Committed), "dropped", len(out.Dropped), "reconciled", len(out.Reconciled))
	return out, nil
}

type compactionParticipant struct {
	c       *compaction
	t       *delta.Table
	o       Options
	aborted map[*jobState]bool
}

func (p *compactionParticipant) observe(ctx context.Context, version int64, actions []delta.Action) error {
	if err := p.c.observe(ctx, version, actions); err != nil {
		return err
	}
	p.abortDropped(ctx)
	return nil
}

// abortDropped deletes the outputs of jobs dropped since the last call.
func (p *compactionParticipant) abortDropped(ctx context.Context) {
	for _, j := range p.c.jobs {
		if j.dropped != nil && !p.aborted[j] {
			p.aborted[j] = true
			abortResult(ctx, p.t, j.res, p.o)
			p.o.Logger.Info("compaction job dropped", "table", p.t.URL, "job", j.dropped.JobID, "kind", j.dropped.Kind, "reason", j.dropped.Reason)
		}
	}
}

func (p *compactionParticipant) build(ctx context.Context) ([]delta.Action, map[string]string, func(context.Context), error) {
	if p.c.active() == 0 {
		return nil, nil, nil, nil
	}
	removes, adds, dvKeys, err := p.c.attemptActions(ctx)
	cleanup := func(ctx context.Context) {
		ctx, cancel := cleanupContext(ctx)
		defer cancel()
		if err := deleteKeys(ctx, p.t, dvKeys); err != nil {
			p.o.Logger.Warn("cleanup of reconciled DV files failed", "error", err)
		}
	}
	if err != nil {
		cleanup(ctx)
		return nil, nil, nil, err
	}
	acts := make([]delta.Action, 0, len(removes)+len(adds))
	for _, r := range removes {
		acts = append(acts, delta.Action{Remove: r})
	}
	for _, a := range adds {
		acts = append(acts, delta.Action{Add: a})
	}
	return acts, p.c.metrics(removes, adds), cleanup, nil
}

// cleanupContext detaches cleanup from the caller's cancellation (which may
// be why we are cleaning up) but still bounds it.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
}

// abortResult deletes a result's outputs (never committed).
func abortResult(ctx context.Context, t *delta.Table, res *writer.Result, o Options) {
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	if err := res.Abort(ctx); err != nil {
		o.Logger.Warn("abort job outputs", "error", err)
	}
	var keys []string
	for _, out := range res.Outputs {
		k := out.Key
		if k == "" && out.Add != nil {
			k, _ = out.Add.Key()
		}
		if k != "" {
			keys = append(keys, k)
		}
	}
	if err := deleteKeys(ctx, t, keys); err != nil {
		o.Logger.Warn("delete dropped job outputs", "error", err)
	}
}

func abortAll(ctx context.Context, t *delta.Table, results []*writer.Result, o Options) {
	for _, r := range results {
		if r != nil {
			abortResult(ctx, t, r, o)
		}
	}
}

// String summarizes an outcome for logs.
func (o *Outcome) String() string {
	return fmt.Sprintf("read %d committed %d: %d jobs, %d dropped, %d reconciled", o.ReadVersion, o.Version, len(o.Committed), len(o.Dropped), len(o.Reconciled))
}
