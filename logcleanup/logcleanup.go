package logcleanup

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"gocloud.dev/gcerrors"
	"golang.org/x/sync/errgroup"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/checkpointwrite"
	deltaprops "github.com/compactord/compactord/delta/props"
	"github.com/compactord/compactord/internal/deletegate"
)

// DefaultConcurrency is the number of deletes in flight.
const DefaultConcurrency = 16

// sidecarGrace keeps unreferenced sidecars younger than a day (before
// midnight UTC): a checkpoint being written references them only once its
// top-level file lands.
const sidecarGrace = 24 * time.Hour

// Options steer Cleanup. The zero value is usable.
type Options struct {
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Retention overrides delta.logRetentionDuration when > 0.
	Retention time.Duration
	// DryRun reports what would be deleted and deletes (and writes) nothing.
	DryRun bool
	// Concurrency bounds the deletes in flight (default DefaultConcurrency).
	Concurrency int
	// Logger receives the run's summary (default null).
	Logger hclog.Logger
	// OnDelete, when set, is called before each delete (tests inject faults
	// and crashes through it); an error stops the cleanup.
	OnDelete func(key string) error
}

// File is one file Cleanup deleted (or would delete).
type File struct {
	Key     string            `json:"key"`
	Kind    delta.LogFileKind `json:"kind"`
	Version int64             `json:"version"`
	Size    int64             `json:"size"`
}

// Result says what Cleanup found and did.
type Result struct {
	Table string `json:"table"`
	// Cutoff is now - retention, truncated to midnight UTC.
	Cutoff time.Time `json:"cutoff"`
	// CutoffCommit is the newest commit not newer than Cutoff (-1: none).
	CutoffCommit int64 `json:"cutoffCommit"`
	// Boundary is the checkpoint version everything below which goes
	// (-1: nothing to clean).
	Boundary int64 `json:"boundary"`
	// Latest is the newest commit version.
	Latest int64 `json:"latest"`
	// DryRun repeats Options.DryRun.
	DryRun bool `json:"dryRun"`
	// Deleted lists the files deleted (on a dry run: that would be).
	Deleted []File `json:"deleted"`
	// BytesDeleted sums their sizes.
	BytesDeleted int64 `json:"bytesDeleted"`
	// CompatCheckpoint is the V2 compatibility checkpoint written first
	// ("" when none was needed).
	CompatCheckpoint string `json:"compatCheckpoint,omitempty"`
	// Skipped says why nothing was deleted.
	Skipped string `json:"skipped,omitempty"`
	// Refused counts the files the deletion gate refused (a name that is
	// not a log file's: never expected of a computed list; logged).
	Refused int64 `json:"refused,omitempty"`
}

// ErrCatalogManaged is wrapped when the table's commits belong to a catalog.
var ErrCatalogManaged = errors.New("catalog-managed table: log cleanup belongs to the catalog")

// Cleanup deletes the expired log of t:
//
//  1. cutoff = now - delta.logRetentionDuration (default 30 days),
//     truncated to midnight UTC, as Spark's MetadataCleanup does; commit
//     times are the commit files' modification times made strictly
//     increasing with the version (Spark's BufferingLogDeletionIterator);
//  2. the cutoff commit is the newest commit not newer than the cutoff; the
//     boundary is the newest complete checkpoint at or below it (and not
//     past _last_checkpoint, which Spark's readers trust). The boundary's
//     snapshot must load from that checkpoint, or nothing is deleted;
//  3. below the boundary go commits, version checksums and log compaction
//     files whose start version is at or below the boundary, then (only
//     then) the checkpoints below the boundary, then the sidecars that no
//     remaining checkpoint references and that are older than a day.
//
// Nothing is deleted when delta.enableExpiredLogCleanup is false, when no
// checkpoint qualifies, or on a table with checkpointProtection whose
// boundary is below delta.requireCheckpointProtectionBeforeVersion (such
// history goes only in one cut up to that version). Catalog-managed tables
// are refused. On V2 tables a classic-named compatibility checkpoint of
// the newest checkpoint is written before anything is deleted. Deletes run
// with bounded concurrency; a crash at any point leaves every version at or
// after the boundary loadable.
func Cleanup(ctx context.Context, t *delta.Table, opts Options) (*Result, error) {
	now := time.Now()
	if opts.Now != nil {
		now = opts.Now()
	}
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	res := &Result{Table: t.URL, CutoffCommit: -1, Boundary: -1, Latest: -1, DryRun: opts.DryRun, Deleted: []File{}}
	snap, err := delta.LoadSnapshot(ctx, t, -1)
	if err != nil {
		return res, err
	}
	res.Latest = snap.Version
	for _, f := range []string{"catalogManaged", "catalogOwned-preview", "coordinatedCommits-preview"} {
		if snap.Protocol.HasFeature(f) {
			return res, fmt.Errorf("table %s: %w (feature %s)", t.URL, ErrCatalogManaged, f)
		}
	}
	if err := delta.CheckpointWritable(snap); err != nil {
		return res, fmt.Errorf("table %s: log cleanup: %w", t.URL, err)
	}
	props := snap.Properties()
	if err := props.Check(deltaprops.PropEnableExpiredLogCleanup, deltaprops.PropLogRetentionDuration, deltaprops.PropRequireCheckpointProtectionBeforeVersion); err != nil {
		return res, fmt.Errorf("table %s: %w", t.URL, err)
	}
	if !props.ExpiredLogCleanup {
		res.Skipped = "delta.enableExpiredLogCleanup is false"
		return res, nil
	}
	retention := props.LogRetention
	if opts.Retention > 0 {
		retention = opts.Retention
	}
	res.Cutoff = now.Add(-retention).UTC().Truncate(24 * time.Hour)

	l, err := delta.ListLog(ctx, t)
	if err != nil {
		return res, err
	}
	res.CutoffCommit = cutoffCommit(l, res.Cutoff)
	if res.CutoffCommit < 0 {
		res.Skipped = fmt.Sprintf("no commit is older than the cutoff %s", res.Cutoff.Format(time.RFC3339))
		return res, nil
	}
	boundary := l.NewestCheckpoint(res.CutoffCommit)
	hint, err := delta.LastCheckpointVersion(ctx, t)
	if err != nil {
		return res, err
	}
	if hint < 0 {
		res.Skipped = "no readable _last_checkpoint (Spark cleans nothing without one)"
		return res, nil
	}
	if boundary > hint {
		boundary = l.NewestCheckpoint(hint)
	}
	if boundary < 0 {
		res.Skipped = fmt.Sprintf("no checkpoint at or before the cutoff commit %d: nothing is covered", res.CutoffCommit)
		return res, nil
	}
	if snap.Protocol.HasFeature("checkpointProtection") && boundary < props.RequireCheckpointProtectionBeforeVersion {
		res.Skipped = fmt.Sprintf("checkpointProtection: checkpoint %d is below %s=%d; history before it goes only in one cut",
			boundary, deltaprops.PropRequireCheckpointProtectionBeforeVersion, props.RequireCheckpointProtectionBeforeVersion)
		return res, nil
	}
	var commits, checkpoints []File
	for _, e := range l.Entries {
		f := File{Key: e.Key, Kind: e.Kind, Version: e.Version, Size: e.Size}
		switch {
		case e.Kind == delta.LogCompaction:
			if e.Start <= boundary {
				commits = append(commits, f)
			}
		case e.Version >= boundary:
		case e.Kind == delta.LogCommit, e.Kind == delta.LogChecksum:
			commits = append(commits, f)
		case e.Kind.IsCheckpoint():
			checkpoints = append(checkpoints, f)
		}
	}
	if len(commits)+len(checkpoints) == 0 {
		res.Skipped = fmt.Sprintf("nothing below checkpoint %d", boundary)
		res.Boundary = boundary
		return res, nil
	}
	// The boundary checkpoint must really cover its version.
	if bs, err := delta.LoadSnapshot(ctx, t, boundary); err != nil {
		return res, fmt.Errorf("table %s: checkpoint %d does not load, nothing deleted: %w", t.URL, boundary, err)
	} else if bs.Version != boundary {
		return res, fmt.Errorf("table %s: checkpoint %d loaded as version %d, nothing deleted", t.URL, boundary, bs.Version)
	}
	res.Boundary = boundary

	v2 := snap.Protocol.HasFeature("v2Checkpoint")
	if v2 {
		newest := l.NewestCheckpoint(snap.Version)
		if opts.DryRun {
			// A dry run writes nothing, the compatibility checkpoint included.
		} else if key, err := checkpointwrite.WriteCompatCheckpoint(ctx, t, newest); err != nil {
			return res, fmt.Errorf("table %s: compatibility checkpoint %d: %w", t.URL, newest, err)
		} else {
			res.CompatCheckpoint = key
		}
	}
	d := &deleter{t: t, opts: opts, res: res,
		gate: deletegate.New(t.Bucket, deletegate.Options{Table: t.URL, Logger: log, LocalRoot: deletegate.LocalRootOf(t.URL)})}
	defer func() { res.Refused = d.gate.Refused() }()
	// Commits before checkpoints (checkpointProtection requirement d, and
	// a crash in between leaves older versions covered).
	if err := d.run(ctx, commits); err != nil {
		return res, err
	}
	if err := d.run(ctx, checkpoints); err != nil {
		return res, err
	}
	if v2 && len(checkpoints) > 0 {
		side, err := unreferencedSidecars(ctx, t, boundary, now, res.Cutoff, opts.DryRun, checkpoints)
		if err != nil {
			return res, err
		}
		if err := d.run(ctx, side); err != nil {
			return res, err
		}
	}
	log.Info("log cleanup", "table", t.URL, "cutoff", res.Cutoff, "boundary", boundary,
		"deleted", len(res.Deleted), "bytes", res.BytesDeleted, "dry_run", opts.DryRun)
	return res, nil
}

// cutoffCommit returns the newest commit whose (monotonic) time is not
// after cutoff, or -1.
func cutoffCommit(l *delta.LogListing, cutoff time.Time) int64 {
	best := int64(-1)
	var last int64 = -1 << 62
	lastVersion := int64(-1)
	for _, e := range l.Entries {
		if e.Kind != delta.LogCommit || e.Version == lastVersion {
			continue
		}
		ts := e.ModTime.UnixMilli()
		if ts <= last {
			ts = last + 1
		}
		last, lastVersion = ts, e.Version
		if ts <= cutoff.UnixMilli() {
			best = e.Version
		}
	}
	return best
}

// unreferencedSidecars lists the sidecars that no checkpoint at or after
// the boundary references and that are older than a day before midnight
// UTC and than the cutoff. gone are the checkpoints this run deletes
// (still listed on a dry run).
func unreferencedSidecars(ctx context.Context, t *delta.Table, boundary int64, now, cutoff time.Time, dryRun bool, gone []File) ([]File, error) {
	l, err := delta.ListLog(ctx, t)
	if err != nil {
		return nil, err
	}
	deleted := map[string]bool{}
	if dryRun {
		for _, f := range gone {
			deleted[f.Key] = true
		}
	}
	referenced := map[string]bool{}
	for _, e := range l.Entries {
		if !e.Kind.IsCheckpoint() || e.Version < boundary || deleted[e.Key] {
			continue
		}
		keys, err := delta.CheckpointSidecars(ctx, t, e.Key)
		if err != nil {
			return nil, fmt.Errorf("table %s: sidecars of %s (no sidecar deleted): %w", t.URL, e.Key, err)
		}
		for _, k := range keys {
			referenced[k] = true
		}
	}
	side, err := delta.ListSidecars(ctx, t)
	if err != nil {
		return nil, err
	}
	limit := now.UTC().Truncate(24 * time.Hour).Add(-sidecarGrace)
	if cutoff.Before(limit) {
		limit = cutoff
	}
	var out []File
	for _, s := range side {
		if referenced[s.Key] || !s.ModTime.Before(limit) {
			continue
		}
		out = append(out, File{Key: s.Key, Kind: delta.LogSidecar, Size: s.Size})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// deleter deletes files with bounded concurrency and records them.
type deleter struct {
	t    *delta.Table
	opts Options
	res  *Result
	gate *deletegate.Gate
	mu   sync.Mutex
}

func (d *deleter) record(f File) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.res.Deleted = append(d.res.Deleted, f)
	d.res.BytesDeleted += f.Size
}

// run deletes files in version order with bounded concurrency. A file
// already gone (a concurrent cleanup) is not an error.
func (d *deleter) run(ctx context.Context, files []File) error {
	if d.opts.DryRun {
		for _, f := range files {
			d.record(f)
		}
		return nil
	}
	limit := d.opts.Concurrency
	if limit <= 0 {
		limit = DefaultConcurrency
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	for _, f := range files {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if d.opts.OnDelete != nil {
				if err := d.opts.OnDelete(f.Key); err != nil {
					return err
				}
			}
			err := d.gate.Delete(gctx, f.Key, deletegate.Log)
			if errors.Is(err, deletegate.ErrRefused) {
				return nil
			}
			if err != nil && gcerrors.Code(err) != gcerrors.NotFound {
				return fmt.Errorf("table %s: delete %s: %w", d.t.URL, f.Key, err)
			}
			if err == nil {
				d.record(f)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}
