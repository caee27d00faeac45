package fanout

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/deletegate"
	"github.com/compactord/compactord/planner"
	"github.com/compactord/compactord/writer"
)

// WorkerOptions configure one attempt of a unit (`compactord run-unit`).
type WorkerOptions struct {
	// Logger receives the attempt's events (default: null logger).
	Logger hclog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Attempt names the attempt (default NewAttemptID). Two attempts of a
	// unit must never share one.
	Attempt string
	// SpillDir is the writer's local spill directory ("": os.TempDir()).
	SpillDir string
	// Open opens the table (default delta.OpenTable).
	Open func(ctx context.Context, url string) (*delta.Table, error)
	// BeforeManifest, when set, runs after every output of the unit is
	// written and before the result manifest is: the one point where a
	// killed worker leaves complete outputs and no manifest. Tests stop a
	// worker there.
	BeforeManifest func(ctx context.Context) error
}

// RunUnit is one attempt of unit index of the plan at planURL: it loads the
// snapshot at the plan's read version, rewrites the unit's jobs with the
// writer exactly as a local run does, records every key it may write in
// its intent record before creating the object, and writes the result
// manifest last (one put: its presence means the unit is done). It never
// commits. On failure it deletes what it wrote and leaves a failure
// manifest naming the error's class and corrupt objects; a killed attempt
// leaves its intent record for the coordinator to clean from.
func RunUnit(ctx context.Context, planURL string, index int, opts WorkerOptions) (*ResultManifest, error) {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Attempt == "" {
		opts.Attempt = NewAttemptID(opts.Now())
	}
	if opts.Open == nil {
		opts.Open = delta.OpenTable
	}
	tableURL, key, err := SplitPlanURL(planURL)
	if err != nil {
		return nil, failure.With(failure.Halt, err)
	}
	t, err := opts.Open(ctx, tableURL)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	sp, err := LoadPlan(ctx, t, key)
	if err != nil {
		return nil, err
	}
	if index < 0 || index >= len(sp.Units) {
		return nil, failure.With(failure.Halt, fmt.Errorf("plan %s has %d units, no unit %d", sp.ID, len(sp.Units), index))
	}
	w := &unitWorker{t: t, sp: sp, index: index, opts: opts,
		log: opts.Logger.With("table", t.URL, "plan", sp.ID, "unit", index, "attempt", opts.Attempt)}
	m, err := w.run(ctx)
	if err != nil {
		w.fail(ctx, err)
		return nil, fmt.Errorf("unit %d of plan %s of %s: %w", index, sp.ID, t.URL, err)
	}
	return m, nil
}

type unitWorker struct {
	t     *delta.Table
	sp    *StoredPlan
	index int
	opts  WorkerOptions
	log   hclog.Logger
	objs  *attempt.Objects
}

func (w *unitWorker) run(ctx context.Context) (*ResultManifest, error) {
	snap, err := delta.LoadSnapshot(ctx, w.t, w.sp.ReadVersion)
	if err != nil {
		return nil, fmt.Errorf("load version %d: %w", w.sp.ReadVersion, err)
	}
	if err := delta.Writable(snap); err != nil {
		return nil, failure.With(failure.Halt, fmt.Errorf("version %d: %w", snap.Version, err))
	}
	unit := w.sp.Units[w.index]
	sub := *w.sp.Plan
	sub.Jobs = make([]*planner.Job, len(unit))
	for i, j := range unit {
		sub.Jobs[i] = w.sp.Plan.Jobs[j]
	}
	jobs, err := compaction.WriterJobs(snap, &sub)
	if err != nil {
		return nil, failure.With(failure.Halt, err)
	}
	for i, j := range jobs {
		if j.ID == fmt.Sprintf("job-%d", i) {
			j.ID = fmt.Sprintf("job-%d", unit[i]) // the plan's numbering
		}
	}
	jr, err := attempt.StartJournal(ctx, w.t.Bucket, "run-unit", attempt.JournalOptions{
		Attempt: w.opts.Attempt, Key: intentKey(w.sp.ID, w.index, w.opts.Attempt)})
	if err != nil {
		return nil, err
	}
	// The record stays when the worker ends: the coordinator reads it.
	defer func() { _ = jr.Close(ctx, nil) }()
	w.objs = &attempt.Objects{}
	w.objs.OnTrack(jr.Track)
	wo := w.sp.Writer.Options()
	wo.Logger = w.log
	wo.SpillDir = w.opts.SpillDir
	w.log.Info("rewriting unit", "jobs", len(jobs), "read_version", snap.Version)
	results, err := writer.RewriteAll(ctx, w.t, snap, jobs, w.objs, wo)
	defer func() {
		for _, r := range results {
			if r != nil {
				_ = r.Origins.Close()
			}
		}
	}()
	if err != nil {
		return nil, err
	}
	m := &ResultManifest{Format: manifestFormat, Plan: w.sp.ID, Unit: w.index, Attempt: w.opts.Attempt}
	for i, r := range results {
		jres, err := w.jobResult(ctx, unit[i], r)
		if err != nil {
			return nil, err
		}
		m.Jobs = append(m.Jobs, jres)
	}
	if err := jr.Err(); err != nil {
		return nil, err
	}
	if w.opts.BeforeManifest != nil {
		if err := w.opts.BeforeManifest(ctx); err != nil {
			return nil, err
		}
	}
	if err := writeJSON(ctx, w.t, unitDir(w.sp.ID, w.index)+resultPrefix+w.opts.Attempt+".json", m); err != nil {
		return nil, err
	}
	w.log.Info("unit done", "jobs", len(m.Jobs))
	return m, nil
}

// jobResult describes one rewritten job, storing a sorted job's origin map
// beside the manifest.
func (w *unitWorker) jobResult(ctx context.Context, job int, r *writer.Result) (JobResult, error) {
	jres := JobResult{Job: job, ID: r.Job.ID, Runs: r.Composition, Sorted: r.Job.Sort != nil,
		BytesRead: r.BytesRead, BytesWritten: r.BytesWritten, Outputs: []OutputResult{}}
	for _, s := range r.Job.Sources {
		jres.Sources = append(jres.Sources, s.Path)
	}
	for _, o := range r.Outputs {
		jres.Outputs = append(jres.Outputs, OutputResult{Add: o.Add, Key: o.Key, Rows: o.NumRecords})
	}
	if r.Origins == nil {
		return jres, nil
	}
	key := unitDir(w.sp.ID, w.index) + originsPrefix + w.opts.Attempt + "-" + strconv.Itoa(job) + ".bin"
	w.objs.Track(key)
	bw, err := w.t.Bucket.NewWriter(ctx, key, nil)
	if err != nil {
		return jres, fmt.Errorf("write origins %s: %w", key, err)
	}
	if err := errors.Join(r.Origins.EncodeTo(bw), bw.Close()); err != nil {
		return jres, fmt.Errorf("write origins %s: %w", key, err)
	}
	jres.Origins = key
	return jres, nil
}

// fail ends a failed attempt: it deletes what the attempt wrote and leaves
// a failure manifest (best effort: the exit code says the same).
func (w *unitWorker) fail(ctx context.Context, err error) {
	ctx = context.WithoutCancel(ctx)
	if w.objs != nil {
		if _, cerr := w.objs.Clean(ctx, deletegate.ForTable(w.t.Bucket, w.t.URL, deletegate.Options{}).Deleter(deletegate.Output)); cerr != nil {
			w.log.Warn("delete the failed attempt's outputs", "error", cerr)
		}
	}
	fm := FailureManifest{Format: manifestFormat, Plan: w.sp.ID, Unit: w.index, Attempt: w.opts.Attempt,
		Class: failure.Of(err).String(), Error: err.Error(), Corrupt: corruptObjects(err), Missing: missingObjects(err)}
	if werr := writeJSON(ctx, w.t, unitDir(w.sp.ID, w.index)+failurePrefix+w.opts.Attempt+".json", fm); werr != nil {
		w.log.Warn("write failure manifest", "error", werr)
	}
}
