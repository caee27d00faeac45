package vacuum

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/deletegate"
	"github.com/compactord/compactord/internal/progress"
)

// ErrCatalogManaged is wrapped when the table's commits belong to a
// catalog: vacuuming it through the file system is not allowed
// (PROTOCOL.md, "Maintenance Operations on Catalog-managed Tables").
var ErrCatalogManaged = errors.New("catalog-managed table: VACUUM must go through its catalog")

// catalogFeatures mark tables whose commits a catalog or coordinator owns.
var catalogFeatures = []string{"catalogManaged", "catalogOwned-preview", "coordinatedCommits-preview"}

// Run vacuums t once (see the package doc): it loads the latest snapshot,
// checks the protocol and the retention, finds the eligible files, writes
// VACUUM START, deletes them with bounded concurrency, removes empty
// directories (local tables), writes VACUUM END and records the newest
// commit outside the window in _delta_log/_last_vacuum_info. A run that
// finds nothing to delete writes nothing to the log.
func Run(ctx context.Context, t *delta.Table, opts Options) (*Result, error) {
	opts = opts.withDefaults()
	if opts.Mode != Lite && opts.Mode != Full {
		return nil, fmt.Errorf("vacuum %s: mode %q: want lite or full", t.URL, opts.Mode)
	}
	snap, err := opts.Snapshots(ctx, t, -1)
	if err != nil {
		return nil, fmt.Errorf("vacuum %s: load snapshot: %w", t.URL, err)
	}
	if err := checkTable(t, snap); err != nil {
		return nil, err
	}
	tableRet, err := TableRetention(snap)
	if err != nil {
		return nil, failure.With(failure.Halt, fmt.Errorf("vacuum %s: %w", t.URL, err))
	}
	retention, specified := tableRet, opts.Retention > 0 || opts.ZeroRetention
	if specified {
		retention = opts.Retention
		if opts.ZeroRetention {
			retention = 0
		}
	}
	if err := checkRetention(retention, tableRet, opts.ForceRetention); err != nil {
		return nil, fmt.Errorf("vacuum %s: %w", t.URL, err)
	}
	if retention < tableRet {
		opts.Logger.Warn("vacuum retention is shorter than the table's: files that concurrent writers and time travel inside the table's window still need may be deleted",
			"table", t.URL, "retention", retention, "table_retention", tableRet)
	}
	now := opts.Now()
	cutoff := now.Add(-retention)
	res := &Result{Table: t.URL, Mode: opts.Mode, DryRun: opts.DryRun, ReadVersion: snap.Version,
		RetentionMillis: retention.Milliseconds(), DefaultRetentionMillis: tableRet.Milliseconds(),
		Cutoff: cutoff.UTC(), EligibleStartVersion: -1, EligibleEndVersion: -1, StartVersion: -1, EndVersion: -1}
	r := &run{t: t, snap: snap, opts: opts, res: res, cutoffMs: cutoff.UnixMilli()}
	if r.res0, err = newResolver(t.URL); err != nil {
		return nil, err
	}
	if r.refs, err = collectReferences(snap, r.res0, r.cutoffMs); err != nil {
		return nil, failure.With(failure.Halt, fmt.Errorf("vacuum %s: %w", t.URL, err))
	}
	for _, ms := range r.refs.protected {
		r.protect(ms)
	}
	r.gate = deletegate.New(t.Bucket, deletegate.Options{Table: t.URL, Logger: opts.Logger, LocalRoot: localRoot(t),
		Referenced: r.refs.isValid})
	if r.list, err = newLister(t); err != nil {
		return nil, err
	}
	defer func() {
		if r.cands != nil {
			r.cands.close()
		}
	}()
	if err := r.find(ctx); err != nil {
		return nil, err
	}
	res.FilesToDelete, res.BytesToDelete = r.cands.n, r.cands.bytes
	res.DeletesRefused = r.gate.Refused()
	res.Orphans = r.cands.byKnd[KindOrphan] + r.cands.byKnd[KindTemp]
	res.TempFiles = r.cands.byKnd[KindTemp]
	if opts.DryRun {
		if opts.OnFile != nil {
			if err := r.cands.each(func(f File) error { opts.OnFile(f); return nil }); err != nil {
				return nil, err
			}
		}
		return res, nil
	}
	if r.cands.n == 0 {
		return res, r.recordWindow(ctx)
	}
	if !opts.NoCommitInfo {
		v, err := r.commitStart(ctx, specified)
		if err != nil {
			return res, fmt.Errorf("vacuum %s: commit VACUUM START: %w", t.URL, err)
		}
		res.StartVersion = v
	}
	opts.Logger.Info("vacuum deleting", "table", t.URL, "mode", opts.Mode, "files", res.FilesToDelete, "bytes", res.BytesToDelete, "cutoff", cutoff.UTC())
	tr := progress.Start(opts.Progress, "vacuum", "delete", r.cands.n, r.cands.bytes, opts.Now())
	st, delErr := deleteAll(ctx, r.gate, r.cands, opts.Concurrency, opts.OnFile, tr)
	res.FilesDeleted, res.BytesDeleted, res.DeleteErrors = st.files.Load(), st.bytes.Load(), st.errs.Load()
	res.DeletesRefused = r.gate.Refused()
	if root := localRoot(t); root != "" && delErr == nil {
		res.DirsDeleted = removeEmptyDirs(root, r.gate, r.dirs, opts.OnFile)
	}
	if !opts.NoCommitInfo {
		v, err := r.commitEnd(ctx, delErr == nil)
		if err != nil {
			opts.Logger.Warn("vacuum could not commit VACUUM END", "table", t.URL, "error", err)
			if delErr == nil {
				delErr = fmt.Errorf("commit VACUUM END: %w", err)
			}
		}
		res.EndVersion = v
	}
	if delErr != nil {
		return res, fmt.Errorf("vacuum %s: %w", t.URL, delErr)
	}
	opts.Logger.Info("vacuum done", "table", t.URL, "mode", opts.Mode, "deleted", res.FilesDeleted, "bytes", res.BytesDeleted, "dirs", res.DirsDeleted)
	return res, r.recordWindow(ctx)
}

// checkTable refuses catalog-managed tables and tables whose writer
// protocol this build does not implement (class Halt).
func checkTable(t *delta.Table, snap *delta.Snapshot) error {
	for _, f := range catalogFeatures {
		if snap.Protocol.HasFeature(f) {
			return failure.With(failure.Halt, fmt.Errorf("vacuum %s: table feature %q: %w", t.URL, f, ErrCatalogManaged))
		}
	}
	if err := delta.Writable(snap); err != nil {
		return failure.With(failure.Halt, fmt.Errorf("vacuum %s version %d: %w", t.URL, snap.Version, err))
	}
	return nil
}

// run is the state of one vacuum.
type run struct {
	t        *delta.Table
	snap     *delta.Snapshot
	opts     Options
	res      *Result
	res0     *resolver
	refs     *references
	gate     *deletegate.Gate
	list     lister
	cutoffMs int64
	cands    *candidates
	dirs     []string
	// latestOutside is the newest commit at or before the cutoff (-1 none).
	latestOutside int64
}

// find fills r.cands: the temp leftovers of the hidden directories, then
// the mode's files.
func (r *run) find(ctx context.Context) error {
	var commits []commitFile
	var temps []File
	for _, dir := range tempSweepDirs {
		err := r.list.shallow(ctx, dir, func(o object) error {
			name := path.Base(o.key)
			if dir == logpath.LogDir {
				if v, ok := parseCommitName(name); ok {
					commits = append(commits, commitFile{version: v, modTime: o.modTime})
					return nil
				}
			}
			if IsTempLeftover(o.key) && o.modTime.UnixMilli() < r.cutoffMs {
				temps = append(temps, File{Key: o.key, Size: o.size, Kind: KindTemp})
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("vacuum %s: %w", r.t.URL, err)
		}
	}
	h := newHistory(r.t, r.snap, commits)
	var err error
	if r.latestOutside, err = h.latestAtOrBefore(ctx, r.cutoffMs); err != nil {
		return fmt.Errorf("vacuum %s: %w", r.t.URL, err)
	}
	if r.opts.Mode == Lite {
		r.cands = newMemCandidates()
		err = r.findLite(ctx, h)
	} else {
		if r.cands, err = newSpillCandidates(r.opts.SpillDir); err != nil {
			return err
		}
		err = r.findFull(ctx)
	}
	if err != nil {
		return err
	}
	for _, f := range temps {
		if err := r.cands.add(f); err != nil {
			return err
		}
	}
	return nil
}

// findLite collects the files of the removes (and their "u" DVs) and cdc
// actions of the commits between the last vacuum's window and this one's,
// as Spark's getFilesFromDeltaLog.
func (r *run) findLite(ctx context.Context, h *history) error {
	if r.latestOutside < 0 {
		return nil // no commit left the window yet
	}
	last, err := readLastVacuumInfo(ctx, r.t)
	if err != nil {
		return fmt.Errorf("vacuum %s: %w", r.t.URL, err)
	}
	earliest := h.earliest()
	start := earliest
	if last != nil {
		start = *last + 1
	}
	// As Spark: without a record of the last vacuum the commits must go
	// back to version 0; with one, they must reach back to just after it
	// (Spark also refuses when the first needed commit is the earliest).
	if (last == nil && earliest != 0) || start < earliest {
		from := "0 (no earlier vacuum is recorded)"
		if last != nil {
			from = fmt.Sprint(start)
		}
		return fmt.Errorf("vacuum %s: needs the commits from version %s but the log starts at %d (log cleanup removed the others): %w",
			r.t.URL, from, earliest, ErrCannotVacuumLite)
	}
	start = min(start, r.snap.Version)
	end := r.latestOutside
	if start > end {
		return nil
	}
	r.res.EligibleStartVersion, r.res.EligibleEndVersion = start, end
	seen, dirSeen := map[string]struct{}{}, map[string]struct{}{}
	defer func() { r.res.Directories = int64(len(r.dirs)) + 1 }()
	consider := func(key string, size, ts int64, kind string) error {
		if ts >= r.cutoffMs || r.refs.isValid(key) {
			return nil
		}
		if _, dup := seen[key]; dup {
			return nil
		}
		seen[key] = struct{}{}
		// The log names these files: a hostile or buggy action may name
		// the log, a record or a path through a link. Refused here, they
		// never count as files to delete.
		if !r.gate.Allowed(key, deletegate.Data) {
			return nil
		}
		for i := strings.LastIndexByte(key, '/'); i > 0; i = strings.LastIndexByte(key[:i], '/') {
			if _, ok := dirSeen[key[:i+1]]; ok {
				break
			}
			dirSeen[key[:i+1]] = struct{}{}
			r.dirs = append(r.dirs, key[:i+1])
		}
		return r.cands.add(File{Key: key, Size: size, Kind: kind})
	}
	for v := start; v <= end; v++ {
		acts, err := delta.ReadCommit(ctx, r.t, v)
		if err != nil {
			if errors.Is(err, logpath.ErrVersionNotFound) {
				return fmt.Errorf("vacuum %s: version %d: %w", r.t.URL, v, ErrCannotVacuumLite)
			}
			return fmt.Errorf("vacuum %s: %w", r.t.URL, err)
		}
		for _, a := range acts {
			switch {
			case a.Remove != nil:
				rm := a.Remove
				ts := deletionTime(rm)
				if dk, ok, err := dvKey(rm.DeletionVector); err != nil {
					return failure.With(failure.Halt, fmt.Errorf("vacuum %s: version %d: deletion vector of %s: %w", r.t.URL, v, rm.Path, err))
				} else if ok {
					if err := consider(dk, int64(rm.DeletionVector.SizeInBytes), ts, KindExpired); err != nil {
						return err
					}
				}
				k, inside, err := r.res0.key(rm.Path)
				if err != nil {
					return failure.With(failure.Halt, fmt.Errorf("version %d: %w", v, err))
				}
				if inside {
					size := int64(0)
					if rm.Size != nil {
						size = *rm.Size
					}
					if err := consider(k, size, ts, KindExpired); err != nil {
						return err
					}
				}
			case a.CDC != nil:
				k, inside, err := r.res0.key(a.CDC.Path)
				if err != nil {
					return failure.With(failure.Halt, fmt.Errorf("version %d: %w", v, err))
				}
				if inside {
					if err := consider(k, a.CDC.Size, 0, KindExpired); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// findFull lists the table root and collects every visible file older than
// the cutoff that the valid set does not hold.
func (r *run) findFull(ctx context.Context) error {
	rule := newHiddenRule(r.snap)
	dirs, err := r.list.walk(ctx, rule, func(o object) error {
		if r.refs.isValid(o.key) {
			return nil
		}
		if ms := o.modTime.UnixMilli(); ms >= r.cutoffMs {
			// No version inside the window needs it, but it was written
			// (or copied) inside the retention: kept until it is older.
			r.protect(ms)
			r.res.ProtectedUnreferenced++
			return nil
		}
		return r.cands.add(File{Key: o.key, Size: o.size, Kind: r.refs.kind(o.key)})
	})
	if err != nil {
		return fmt.Errorf("vacuum %s: %w", r.t.URL, err)
	}
	r.dirs = dirs
	r.res.Directories = int64(len(dirs)) + 1
	return nil
}

// protect counts a file the retention keeps, from ms (its deletion or
// modification time) until ms plus the retention.
func (r *run) protect(ms int64) {
	r.res.ProtectedFiles++
	until := time.UnixMilli(ms).Add(time.Duration(r.res.RetentionMillis) * time.Millisecond).UTC()
	if r.res.ProtectedUntil == nil || until.Before(*r.res.ProtectedUntil) {
		r.res.ProtectedUntil = &until
	}
}

// recordWindow writes _last_vacuum_info after a successful run. A full
// vacuum deleted everything that expired up to its cutoff, so a later lite
// vacuum may start after the same commit (Spark records nothing after a
// full one and so forces the next lite vacuum back to version 0).
func (r *run) recordWindow(ctx context.Context) error {
	if r.latestOutside < 0 {
		return nil
	}
	if r.opts.Mode == Lite && r.res.EligibleEndVersion < 0 {
		return nil
	}
	if err := writeLastVacuumInfo(ctx, r.t, r.latestOutside); err != nil {
		// As in Spark, a failure here costs the next lite vacuum some
		// re-reading, never safety.
		r.opts.Logger.Warn("vacuum could not record its window", "table", r.t.URL, "error", err)
	}
	return nil
}

func (r *run) commitStart(ctx context.Context, specified bool) (int64, error) {
	params := map[string]any{
		"retentionCheckEnabled":  !r.opts.ForceRetention,
		"defaultRetentionMillis": r.res.DefaultRetentionMillis,
	}
	if specified {
		params["specifiedRetentionMillis"] = r.res.RetentionMillis
	}
	tx := &commit.Txn{
		Table: r.t, Snapshot: r.snap, Operation: "VACUUM START", OperationParameters: params,
		OperationMetrics: map[string]string{
			"numFilesToDelete":   fmt.Sprint(r.res.FilesToDelete),
			"sizeOfDataToDelete": fmt.Sprint(r.res.BytesToDelete),
		},
		IsolationLevel: "SnapshotIsolation", IsBlindAppend: true, Actions: []actions.Action{}, Options: r.opts.Commit,
	}
	return tx.Commit(ctx)
}

func (r *run) commitEnd(ctx context.Context, ok bool) (int64, error) {
	status := "COMPLETED"
	var metrics map[string]string
	if ok {
		metrics = map[string]string{
			"numDeletedFiles":        fmt.Sprint(r.res.FilesDeleted + r.res.DirsDeleted),
			"numVacuumedDirectories": fmt.Sprint(r.res.Directories),
		}
	} else {
		status = "FAILED"
	}
	snap := r.snap
	for attempt := 0; ; attempt++ {
		tx := &commit.Txn{
			Table: r.t, Snapshot: snap, Operation: "VACUUM END", OperationParameters: map[string]any{"status": status},
			OperationMetrics: metrics, IsolationLevel: "SnapshotIsolation", IsBlindAppend: true,
			Actions: []actions.Action{}, Options: r.opts.Commit,
		}
		v, err := tx.Commit(ctx)
		if err == nil || attempt > 0 || !errors.Is(err, commit.ErrMetadataChanged) {
			return v, err
		}
		// A metadata change since the read version does not concern an
		// empty commit; read the new state and commit after it.
		if snap, err = r.opts.Snapshots(ctx, r.t, -1); err != nil {
			return -1, err
		}
	}
}
