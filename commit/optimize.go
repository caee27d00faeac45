package commit

import (
	"context"
	"fmt"

	"github.com/compactord/compactord/delta"
	deltaactions "github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/attempt"
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
	Committed []*CompactionJob `json:"-"`
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
// (ErrMetadataChanged, class Retry).
//
// objs is the attempt's object set, owned by the caller: the jobs' outputs
// are in it already, the reconciled DV files this commit writes are added
// to it, and the objects the committed version references (or may
// reference, after an ambiguous put) are marked kept. CommitCompaction
// deletes nothing; the caller cleans objs on every exit path, which removes
// the outputs of dropped jobs, of a failed commit and the DV files of lost
// attempts.
//
// Reconciled results are only committed when all of a job's sources
// reconcile; the committed outcome is returned even when every job was
// dropped (Version -1).
func CommitCompaction(ctx context.Context, t *delta.Table, snap *delta.Snapshot, jobs []*CompactionJob, objs *attempt.Objects, opts CompactionOptions) (*Outcome, error) {
	o := opts.Options.withDefaults()
	out := &Outcome{ReadVersion: snap.Version, Version: -1}
	if objs == nil {
		return out, failure.With(failure.Halt, fmt.Errorf("compaction commit of %s: no attempt.Objects to track its objects in", t.URL))
	}
	inlineMax := uint64(0)
	if opts.InlineDVMaxRows > 0 {
		inlineMax = uint64(opts.InlineDVMaxRows)
	}
	c, err := newCompaction(t.FileKeys(), snap, jobs, tableDVs{t: t, inlineMax: inlineMax, objs: objs}, o.Now().UnixMilli())
	if err != nil {
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
		CommitTags:     rowTrackingTags(snap, map[string]string{tagRowTrackingPreserved: "false"}),
		Objects:        objs,
		Options:        o,
	}
	for k, v := range opts.OperationParameters {
		tx.OperationParameters[k] = v
	}
	p := &compactionParticipant{c: c, t: t, o: o, logged: map[*jobState]bool{}}
	p.logDropped()
	v, err := tx.run(ctx, p)
	out.Conflicts = c.conflicts
	out.Reconciled = c.reconciled
	for _, j := range c.jobs {
		if j.dropped != nil {
			out.Dropped = append(out.Dropped, *j.dropped)
		}
	}
	if err != nil {
		out.Reconciled = nil
		return out, err
	}
	p.logDropped()
	if v < 0 {
		return out, nil
	}
	out.Version = v
	for _, j := range c.jobs {
		if j.dropped == nil {
			out.Committed = append(out.Committed, j.job)
			out.FilesRemoved += len(j.sources)
			out.FilesAdded += len(j.job.Outputs)
		}
	}
	// Keep only reconciliations of committed jobs.
	kept := out.Reconciled[:0]
	for _, r := range out.Reconciled {
		if ss := c.byPath[c.keys.Of(r.Source)]; ss != nil && ss.job.dropped == nil {
			kept = append(kept, r)
		}
	}
	out.Reconciled = kept
	o.Logger.Info("compaction committed", "table", t.URL, "version", v, "readVersion", snap.Version,
		"jobs", len(out.Committed), "dropped", len(out.Dropped), "reconciled", len(out.Reconciled))
	return out, nil
}

type compactionParticipant struct {
	c      *compaction
	t      *delta.Table
	o      Options
	logged map[*jobState]bool
}

func (p *compactionParticipant) observe(ctx context.Context, version int64, actions []deltaactions.Action) error {
	if err := p.c.observe(ctx, version, actions); err != nil {
		return err
	}
	p.logDropped()
	return nil
}

// logDropped logs the jobs dropped since the last call (their outputs stay
// in the attempt's objects, unkept, for the owner's cleanup).
func (p *compactionParticipant) logDropped() {
	for _, j := range p.c.jobs {
		if j.dropped != nil && !p.logged[j] {
			p.logged[j] = true
			p.o.Logger.Info("compaction job dropped", "table", p.t.URL, "job", j.dropped.JobID, "kind", j.dropped.Kind, "reason", j.dropped.Reason)
		}
	}
}

func (p *compactionParticipant) build(ctx context.Context) ([]deltaactions.Action, map[string]string, error) {
	if p.c.active() == 0 {
		return nil, nil, nil
	}
	removes, adds, err := p.c.attemptActions(ctx)
	if err != nil {
		return nil, nil, err
	}
	acts := make([]deltaactions.Action, 0, len(removes)+len(adds))
	for _, r := range removes {
		acts = append(acts, deltaactions.Action{Remove: r})
	}
	for _, a := range adds {
		acts = append(acts, deltaactions.Action{Add: a})
	}
	return acts, p.c.metrics(removes, adds), nil
}

// String summarizes an outcome for logs.
func (o *Outcome) String() string {
	return fmt.Sprintf("read %d committed %d: %d jobs, %d dropped, %d reconciled", o.ReadVersion, o.Version, len(o.Committed), len(o.Dropped), len(o.Reconciled))
}
