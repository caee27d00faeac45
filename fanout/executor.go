package fanout

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/attemptsweep"
	"github.com/compactord/compactord/internal/deletegate"
	"github.com/compactord/compactord/writer"
)

// DefaultStaleAfter is how old (by its id's time) another run's plan
// directory must be before a fanned-out run deletes it as left by a killed
// coordinator (Executor.StaleAfter).
const DefaultStaleAfter = 6 * time.Hour

// DefaultBackoffLimitPerIndex is how many times a unit failing with
// ExitRetry is started again when Executor.BackoffLimitPerIndex is 0.
const DefaultBackoffLimitPerIndex = 2

// Executor is the remote compaction.Executor: it stores the run's plan
// under <table>/_compactord/plans/<id>/, has its Launcher run one worker
// per unit, and as each unit succeeds reads its result manifest and hands
// its jobs back to the run to commit, their outputs tracked in the run's
// attempt. A failed unit's jobs come back with its error (a quarantine
// exit's carries the *failure.CorruptFileError of the object its worker
// named). When the launcher is done it deletes the plan directory and
// every output of failed, killed or surplus attempts; before it stores its
// plan it deletes other runs' plan directories older than StaleAfter (left
// by a killed coordinator).
type Executor struct {
	// Launcher starts the workers (ProcessLauncher, fanout/kubernetes).
	Launcher Launcher
	// Parallelism is how many units run at once (0: 1).
	Parallelism int
	// BackoffLimitPerIndex is how many times a unit failing with ExitRetry
	// (or killed) is started again (0: DefaultBackoffLimitPerIndex; < 0:
	// never).
	BackoffLimitPerIndex int
	// MaxUnits caps the units: jobs are grouped by SplitUnits (0: one job
	// per unit).
	MaxUnits int
	// EngineInfo is recorded in the stored plan.
	EngineInfo string
	// StaleAfter is the age of another run's plan directory that makes it
	// stale (0: DefaultStaleAfter).
	StaleAfter time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

var _ compaction.Executor = (*Executor)(nil)

// Execute implements compaction.Executor.
func (e *Executor) Execute(ctx context.Context, w compaction.Work, done func(compaction.Finished)) error {
	if e.Launcher == nil {
		return errors.New("fanout executor: no launcher")
	}
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	log := w.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	t := w.Table
	if len(w.Jobs) == 0 {
		return nil
	}
	if len(w.Jobs) != len(w.Plan.Jobs) {
		return fmt.Errorf("fanout executor: %d resolved jobs for a plan of %d", len(w.Jobs), len(w.Plan.Jobs))
	}
	staleAfter := e.StaleAfter
	if staleAfter <= 0 {
		staleAfter = DefaultStaleAfter
	}
	if n, err := SweepPlans(ctx, t, now().Add(-staleAfter), log); err != nil {
		log.Warn("sweep stale plan directories", "table", t.URL, "error", err)
	} else if n > 0 {
		log.Info("deleted stale plan directories", "table", t.URL, "plans", n)
	}
	// What the read snapshot references is never an abandoned output,
	// whatever an intent record in the plan's directory says (a writer of
	// the table can list and write there); built only if a record names
	// a key that was not committed.
	var refsOnce sync.Once
	var refs map[string]bool
	readRefs := func() map[string]bool {
		refsOnce.Do(func() {
			var err error
			if refs, err = attemptsweep.Referenced(t.URL, w.Snapshot); err != nil {
				log.Warn("the read snapshot's references: no abandoned output is deleted", "table", t.URL, "error", err)
				refs = nil
			}
		})
		return refs
	}
	units := SplitUnits(w.Plan.Jobs, e.MaxUnits)
	sp := &StoredPlan{ID: NewPlanID(now()), Table: t.URL, ReadVersion: w.Snapshot.Version, Created: now().UTC(),
		EngineInfo: e.EngineInfo, Writer: SettingsOf(w.Writer), Units: units, Plan: w.Plan}
	planURL, err := StorePlan(ctx, t, sp)
	if err != nil {
		// Nothing of it may be there, or the put landed: clean either way.
		_ = deletePlan(ctx, t, sp.ID, nil, readRefs, log)
		return fmt.Errorf("fanout executor: %w", err)
	}
	log = log.With("table", t.URL, "plan", sp.ID)
	c := &collector{t: t, w: w, sp: sp, done: done, log: log, chosen: map[string]bool{}, reported: map[int]bool{}}
	defer func() {
		if err := deletePlan(ctx, t, sp.ID, c.chosen, readRefs, log); err != nil {
			log.Warn("delete the plan directory and abandoned outputs", "error", err)
		}
	}()
	backoff := e.BackoffLimitPerIndex
	switch {
	case backoff == 0:
		backoff = DefaultBackoffLimitPerIndex
	case backoff < 0:
		backoff = 0
	}
	spec := LaunchSpec{PlanID: sp.ID, PlanURL: planURL, Table: t.URL, Units: len(units),
		Parallelism: max(e.Parallelism, 1), BackoffLimitPerIndex: backoff}
	log.Info("fanning out", "units", len(units), "jobs", len(w.Jobs), "parallelism", spec.Parallelism)
	// Buffered for every unit, so a report never waits for a manifest read.
	statuses := make(chan UnitStatus, len(units))
	var reportMu sync.Mutex
	closed := false
	launched := make(chan error, 1)
	go func() {
		err := e.Launcher.Launch(ctx, spec, func(st UnitStatus) {
			reportMu.Lock()
			defer reportMu.Unlock()
			if closed || st.Index < 0 || st.Index >= len(units) || c.reported[st.Index] {
				log.Warn("launcher reported an unknown or finished unit, or after its launch returned", "unit", st.Index)
				return
			}
			c.reported[st.Index] = true
			statuses <- st
		})
		reportMu.Lock()
		closed = true
		close(statuses)
		reportMu.Unlock()
		launched <- err
	}()
	for st := range statuses {
		c.unit(ctx, st)
	}
	launchErr := <-launched
	for i := range units {
		if !c.reported[i] {
			c.failUnit(i, fmt.Errorf("unit %d of plan %s: never reported by the launcher", i, sp.ID))
		}
	}
	if launchErr != nil {
		return fmt.Errorf("fanout executor: %w", launchErr)
	}
	return nil
}

// collector turns finished units into the run's finished jobs.
type collector struct {
	t        *delta.Table
	w        compaction.Work
	sp       *StoredPlan
	done     func(compaction.Finished)
	log      hclog.Logger
	chosen   map[string]bool // output keys handed to the run
	reported map[int]bool    // guarded by Execute's report lock
}

// unit hands back the jobs of one final unit.
func (c *collector) unit(ctx context.Context, st UnitStatus) {
	if !st.Succeeded {
		c.failUnit(st.Index, c.unitError(ctx, st))
		return
	}
	m, err := c.manifest(ctx, st.Index)
	if err != nil {
		c.failUnit(st.Index, err)
		return
	}
	fin, err := c.jobs(ctx, m)
	if err != nil {
		for _, f := range fin {
			if f.Release != nil {
				f.Release()
			}
		}
		c.failUnit(st.Index, err)
		return
	}
	for _, f := range fin {
		for _, o := range f.Job.Outputs {
			k, _ := url.PathUnescape(o.Add.Path)
			c.w.Objects.Track(k)
			c.chosen[k] = true
		}
		if c.w.Writer.SourceRead != nil {
			for _, s := range f.Job.Sources {
				c.w.Writer.SourceRead(s)
			}
		}
		c.done(f)
	}
	c.log.Info("unit done", "unit", st.Index, "attempts", st.Attempts, "attempt", m.Attempt)
}

// failUnit reports every job of unit i as failed with err.
func (c *collector) failUnit(i int, err error) {
	c.log.Warn("unit failed", "unit", i, "error", err)
	for _, j := range c.sp.Units[i] {
		c.done(compaction.Finished{Index: j, Err: err})
	}
}

// unitError is why a unit failed: its newest failure manifest (which names
// corrupt objects), else the launcher's reason, classed by the exit code.
func (c *collector) unitError(ctx context.Context, st UnitStatus) error {
	base := fmt.Errorf("unit %d of plan %s failed after %d attempts (exit %d): %s", st.Index, c.sp.ID, st.Attempts, st.ExitCode, st.Reason)
	keys, err := c.unitKeys(ctx, st.Index, failurePrefix)
	if err == nil && len(keys) > 0 {
		var fm FailureManifest
		if err := readJSON(ctx, c.t, keys[len(keys)-1], &fm); err == nil {
			return fmt.Errorf("unit %d of plan %s failed after %d attempts (exit %d): %w", st.Index, c.sp.ID, st.Attempts, st.ExitCode, fm.Err())
		}
	}
	var corrupt []error
	for _, line := range strings.Split(st.Reason, "\n") {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), quarantineLine); ok {
			corrupt = append(corrupt, &failure.CorruptFileError{Kind: failure.DataFile, Path: p, DataFile: p, Err: errors.New("named by the worker")})
		}
	}
	switch {
	case len(corrupt) > 0:
		return fmt.Errorf("%w (%w)", base, errors.Join(corrupt...))
	case st.ExitCode == ExitQuarantine:
		return failure.With(failure.Quarantine, base)
	case st.ExitCode == ExitHalt:
		return failure.With(failure.Halt, base)
	}
	return base
}

// quarantineLine starts the stderr line a worker prints for each corrupt
// data file it met (QuarantineLine).
const quarantineLine = "compactord run-unit: quarantine "

// QuarantineLine is the stderr line a worker prints for a corrupt data
// file, which the coordinator reads back from a launcher's Reason when no
// failure manifest is there.
func QuarantineLine(dataFile string) string { return quarantineLine + dataFile }

// unitKeys lists the keys of unit i's directory whose name starts with
// prefix, sorted (attempt ids sort by start time).
func (c *collector) unitKeys(ctx context.Context, i int, prefix string) ([]string, error) {
	keys, err := listKeys(ctx, c.t.Bucket, unitDir(c.sp.ID, i)+prefix)
	slices.Sort(keys)
	return keys, err
}

// manifest reads the result manifest of a succeeded unit. With several
// complete attempts (a retried pod whose first attempt finished after
// all), the earliest is used; the others' outputs are cleaned with the plan.
func (c *collector) manifest(ctx context.Context, i int) (*ResultManifest, error) {
	keys, err := c.unitKeys(ctx, i, resultPrefix)
	if err != nil {
		return nil, fmt.Errorf("unit %d of plan %s: %w", i, c.sp.ID, err)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("unit %d of plan %s succeeded but wrote no result manifest", i, c.sp.ID)
	}
	if len(keys) > 1 {
		c.log.Info("unit has more than one result; using the first", "unit", i, "results", len(keys))
	}
	m := &ResultManifest{}
	if err := readJSON(ctx, c.t, keys[0], m); err != nil {
		return nil, err
	}
	if m.Format != manifestFormat || m.Plan != c.sp.ID || m.Unit != i {
		return nil, fmt.Errorf("result %s: format %d, plan %s, unit %d: not this unit's", keys[0], m.Format, m.Plan, m.Unit)
	}
	return m, nil
}

// jobs checks a manifest against the plan and builds the jobs to commit.
func (c *collector) jobs(ctx context.Context, m *ResultManifest) ([]compaction.Finished, error) {
	want := c.sp.Units[m.Unit]
	if len(m.Jobs) != len(want) {
		return nil, fmt.Errorf("result of unit %d holds %d jobs, the plan %d", m.Unit, len(m.Jobs), len(want))
	}
	var out []compaction.Finished
	for k, jr := range m.Jobs {
		if jr.Job != want[k] {
			return out, fmt.Errorf("result of unit %d: job %d where the plan has %d", m.Unit, jr.Job, want[k])
		}
		wj := c.w.Jobs[jr.Job]
		paths := make([]string, len(wj.Sources))
		for i, s := range wj.Sources {
			paths[i] = s.Path
		}
		if !slices.Equal(paths, jr.Sources) {
			return out, fmt.Errorf("result of unit %d job %s read %v, the plan %v", m.Unit, jr.ID, jr.Sources, paths)
		}
		cj := &commit.CompactionJob{ID: wj.ID, Sources: wj.Sources, Runs: jr.Runs, Sorted: jr.Sorted}
		for _, o := range jr.Outputs {
			if o.Add == nil {
				return out, fmt.Errorf("result of unit %d job %s: an output without an add", m.Unit, jr.ID)
			}
			cj.Outputs = append(cj.Outputs, commit.JobOutput{Add: o.Add, Rows: o.Rows})
		}
		f := compaction.Finished{Index: jr.Job, Job: cj, BytesRead: jr.BytesRead, BytesWritten: jr.BytesWritten}
		if jr.Origins != "" {
			om, err := c.origins(ctx, jr.Origins)
			if err != nil {
				return out, err
			}
			cj.Origins = om
			f.Release = func() { _ = om.Close() }
		}
		out = append(out, f)
	}
	return out, nil
}

// origins reads a sorted job's encoded origin map into a local one.
func (c *collector) origins(ctx context.Context, key string) (*writer.OriginMap, error) {
	r, err := c.t.Bucket.NewReader(ctx, key, nil)
	if err != nil {
		return nil, fmt.Errorf("read origins %s of %s: %w", key, c.t.URL, err)
	}
	defer r.Close()
	so := c.w.Writer.Sort
	m, err := writer.DecodeOriginMap(bufio.NewReader(r), c.w.Writer.SpillDir, so.OriginMemoryBytes)
	if err != nil {
		return nil, fmt.Errorf("origins %s of %s: %w", key, c.t.URL, err)
	}
	return m, nil
}

// listKeys lists every key under prefix.
func listKeys(ctx context.Context, b *blob.Bucket, prefix string) ([]string, error) {
	var keys []string
	err := delta.List(ctx, b, &blob.ListOptions{Prefix: prefix}, func() { keys = nil }, func(o *blob.ListObject) {
		if !o.IsDir {
			keys = append(keys, o.Key)
		}
	})
	return keys, err
}

// deletePlan deletes what plan id's attempts wrote (every key of every
// intent record but those in keep and those referenced reports, with the
// upload temp files a killed write leaves beside them; referenced is asked
// only for a key not in keep, and a nil set it returns keeps every such
// key) and then the plan directory itself. It ignores ctx's cancellation
// (it runs on the run's exit paths) and bounds itself.
func deletePlan(ctx context.Context, t *delta.Table, id string, keep map[string]bool, referenced func() map[string]bool, log hclog.Logger) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	keys, err := listKeys(ctx, t.Bucket, PlanDir(id))
	if err != nil {
		return err
	}
	var errs []error
	outputs := 0
	gate := deletegate.New(t.Bucket, deletegate.Options{Table: t.URL, Logger: log, LocalRoot: deletegate.LocalRootOf(t.URL),
		Referenced: func(k string) bool {
			if keep[k] {
				return true
			}
			refs := referenced()
			return refs == nil || refs[k]
		}})
	for _, k := range keys {
		if !strings.HasPrefix(path.Base(k), intentPrefix) {
			continue
		}
		var rec attempt.Record
		if err := readJSON(ctx, t, k, &rec); err != nil {
			errs = append(errs, err)
			continue
		}
		for _, out := range rec.Keys {
			if keep[out] || strings.HasPrefix(out, PlanDir(id)) {
				continue
			}
			n, err := attemptsweep.DeleteWithLeftovers(ctx, gate, out)
			outputs += n
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		// Keep the intent records for the next sweep to retry.
		return fmt.Errorf("plan %s of %s: %w", id, t.URL, err)
	}
	for _, k := range keys {
		if err := gate.Delete(ctx, k, deletegate.Record); err != nil && !isNotFound(err) && !errors.Is(err, deletegate.ErrRefused) {
			errs = append(errs, fmt.Errorf("delete %s of %s: %w", k, t.URL, err))
		}
	}
	log.Debug("deleted plan directory", "objects", len(keys), "abandoned_outputs", outputs)
	return errors.Join(errs...)
}

// SweepPlans deletes the plan directories of t whose id says they were
// stored before cutoff (their coordinator is gone: a run deletes its own
// directory on every exit path it lives through), with the outputs their
// attempts recorded but no commit references: the outputs the killed
// coordinator committed in a batch before it died are live adds or
// tombstones of the latest snapshot and stay. It returns how many plans
// it deleted.
func SweepPlans(ctx context.Context, t *delta.Table, cutoff time.Time, log hclog.Logger) (int, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	var ids []string
	it := t.Bucket.List(&blob.ListOptions{Prefix: PlansDir, Delimiter: "/"})
	for {
		o, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("list plans of %s: %w", t.URL, err)
		}
		id := strings.TrimSuffix(strings.TrimPrefix(o.Key, PlansDir), "/")
		if at, ok := planIDTime(id); o.IsDir && ok && at.Before(cutoff) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return 0, nil
	}
	snap, err := delta.LoadSnapshot(ctx, t, -1)
	if err != nil {
		return 0, fmt.Errorf("sweep plans of %s: %w", t.URL, err)
	}
	referenced, err := attemptsweep.Referenced(t.URL, snap)
	if err != nil {
		return 0, fmt.Errorf("sweep plans of %s: %w", t.URL, err)
	}
	var errs []error
	n := 0
	for _, id := range ids {
		if err := deletePlan(ctx, t, id, referenced, func() map[string]bool { return referenced }, log); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

func isNotFound(err error) bool { return gcerrors.Code(err) == gcerrors.NotFound }

// BySize is the executor a policy's executor block makes: a plan whose jobs
// read at least MinBytes (their summed source bytes) runs on Remote, a
// smaller one on Local (nil: compaction.Local), so that only the big runs
// pay for workers.
type BySize struct {
	// MinBytes is the least a plan must read to be fanned out.
	MinBytes int64
	// Remote runs the big plans (an Executor).
	Remote compaction.Executor
	// Local runs the rest (nil: compaction.Local).
	Local compaction.Executor
}

var _ compaction.Executor = BySize{}

// Execute implements compaction.Executor.
func (b BySize) Execute(ctx context.Context, w compaction.Work, done func(compaction.Finished)) error {
	var bytes int64
	for _, j := range w.Jobs {
		for _, s := range j.Sources {
			bytes += s.Size
		}
	}
	if bytes >= b.MinBytes && b.Remote != nil {
		return b.Remote.Execute(ctx, w, done)
	}
	local := b.Local
	if local == nil {
		local = compaction.Local{}
	}
	return local.Execute(ctx, w, done)
}
