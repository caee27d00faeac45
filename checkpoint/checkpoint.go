package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/checkpointwrite"
	"github.com/compactord/compactord/delta/logpath"
	deltaprops "github.com/compactord/compactord/delta/props"
)

// Options steer the checkpoint operation. The zero value is usable.
type Options struct {
	// Now is the clock tombstones and txn entries expire against
	// (default time.Now).
	Now func() time.Time
	// MaxBehind is CatchUp's threshold: it checkpoints when the newest
	// checkpoint is more than MaxBehind commits behind the latest version.
	// 0 = the table's delta.checkpointInterval.
	MaxBehind int64
	// Delta is passed to checkpointwrite.WriteCheckpoint (Now is set from Now).
	Delta checkpointwrite.CheckpointOptions
	// Logger receives one line per checkpoint written (default null).
	Logger hclog.Logger
}

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

func (o Options) logger() hclog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return hclog.NewNullLogger()
}

// Result says what the operation found and did.
type Result struct {
	// Table is the table URL.
	Table string `json:"table"`
	// Latest is the newest commit version seen.
	Latest int64 `json:"latest"`
	// Interval is the table's delta.checkpointInterval.
	Interval int64 `json:"interval"`
	// NewestBefore is the newest complete checkpoint before the operation
	// (-1: none).
	NewestBefore int64 `json:"newestBefore"`
	// Checkpoint describes the checkpoint written; nil when none was.
	Checkpoint *checkpointwrite.CheckpointInfo `json:"checkpoint,omitempty"`
	// Skipped says why nothing was written.
	Skipped string `json:"skipped,omitempty"`
	// Duration is the time spent writing the checkpoint.
	Duration time.Duration `json:"durationNs"`
}

// Write checkpoints the table at version (the latest when version < 0),
// whatever the interval. A version that already has a complete checkpoint
// is skipped, not rewritten.
func Write(ctx context.Context, t *delta.Table, version int64, opts Options) (*Result, error) {
	l, err := delta.ListLog(ctx, t)
	if err != nil {
		return nil, err
	}
	res := &Result{Table: t.URL, Latest: l.LatestCommit(), NewestBefore: l.NewestCheckpoint(1<<62 - 1)}
	if res.Latest < 0 {
		return res, delta.NoCommitsError(ctx, t)
	}
	if version < 0 {
		version = res.Latest
	}
	if version > res.Latest {
		return res, fmt.Errorf("table %s: version %d requested, latest is %d: %w", t.URL, version, res.Latest, logpath.ErrVersionNotFound)
	}
	return res, write(ctx, t, l, version, opts, res)
}

// AfterCommit checkpoints version, a version compactord just committed,
// when Spark would: version != 0 and version % delta.checkpointInterval
// == 0 (the interval as of that version). Other versions are skipped. The
// caller must not fail or undo its commit when this fails.
func AfterCommit(ctx context.Context, t *delta.Table, version int64, opts Options) (*Result, error) {
	res := &Result{Table: t.URL, Latest: version, NewestBefore: -1}
	return res, afterCommit(ctx, t, nil, version, opts, res)
}

// afterCommit is AfterCommit with the log listing l when the caller has one
// (nil: listed here, and only when the version is due).
func afterCommit(ctx context.Context, t *delta.Table, l *delta.LogListing, version int64, opts Options, res *Result) error {
	snap, err := delta.LoadSnapshot(ctx, t, version)
	if err != nil {
		return err
	}
	if res.Interval, err = intervalOf(t, snap); err != nil {
		return err
	}
	if version == 0 || version%res.Interval != 0 {
		res.Skipped = fmt.Sprintf("version %d is not a multiple of delta.checkpointInterval=%d", version, res.Interval)
		return nil
	}
	if l == nil {
		if l, err = delta.ListLog(ctx, t); err != nil {
			return err
		}
	}
	res.Latest, res.NewestBefore = l.LatestCommit(), l.NewestCheckpoint(1<<62-1)
	return writeSnapshot(ctx, t, l, snap, opts, res)
}

// CatchUp checkpoints a table whose newest checkpoint is more than
// MaxBehind commits (default: the interval) behind its latest version. It
// writes at the newest multiple of the interval at or below the latest
// version, never at "last checkpoint + N": writers that follow the same
// modulo rule then agree on the versions and never duplicate each other's
// checkpoints. Nothing is written when that multiple already has one.
func CatchUp(ctx context.Context, t *delta.Table, opts Options) (*Result, error) {
	l, err := delta.ListLog(ctx, t)
	if err != nil {
		return nil, err
	}
	res := &Result{Table: t.URL, Latest: l.LatestCommit(), NewestBefore: l.NewestCheckpoint(1<<62 - 1)}
	if res.Latest < 0 {
		res.Skipped = "no commits"
		return res, nil
	}
	snap, err := delta.LoadSnapshot(ctx, t, res.Latest)
	if err != nil {
		return res, err
	}
	return res, catchUp(ctx, t, l, snap, opts, res)
}

// catchUp is CatchUp given the listing l, the snapshot of the latest
// version, and res.Latest / res.NewestBefore set (the newest checkpoint may
// be newer than l knows, when the caller just wrote it).
func catchUp(ctx context.Context, t *delta.Table, l *delta.LogListing, latest *delta.Snapshot, opts Options, res *Result) error {
	interval, err := intervalOf(t, latest)
	if err != nil {
		return err
	}
	res.Interval = interval
	maxBehind := opts.MaxBehind
	if maxBehind <= 0 {
		maxBehind = interval
	}
	behind := res.Latest - res.NewestBefore
	if res.NewestBefore < 0 {
		behind = res.Latest + 1
	}
	if behind <= maxBehind {
		res.Skipped = fmt.Sprintf("newest checkpoint is %d commits behind (threshold %d)", behind, maxBehind)
		return nil
	}
	target := res.Latest - res.Latest%interval
	if target == 0 || target <= res.NewestBefore {
		res.Skipped = fmt.Sprintf("no multiple of delta.checkpointInterval=%d after checkpoint %d up to version %d", interval, res.NewestBefore, res.Latest)
		return nil
	}
	snap := latest
	if target != res.Latest {
		if snap, err = delta.LoadSnapshot(ctx, t, target); err != nil {
			return err
		}
	}
	return writeSnapshot(ctx, t, l, snap, opts, res)
}

// intervalOf is snap's delta.checkpointInterval, refused when malformed.
func intervalOf(t *delta.Table, snap *delta.Snapshot) (int64, error) {
	props := snap.Properties()
	if err := props.Check(deltaprops.PropCheckpointInterval); err != nil {
		return 0, fmt.Errorf("table %s: %w", t.URL, err)
	}
	return int64(props.CheckpointInterval), nil
}

func write(ctx context.Context, t *delta.Table, l *delta.LogListing, version int64, opts Options, res *Result) error {
	if l.NewestCheckpoint(version) == version {
		res.Skipped = fmt.Sprintf("version %d already has a checkpoint", version)
		return nil
	}
	snap, err := delta.LoadSnapshot(ctx, t, version)
	if err != nil {
		return err
	}
	return writeSnapshot(ctx, t, l, snap, opts, res)
}

func writeSnapshot(ctx context.Context, t *delta.Table, l *delta.LogListing, snap *delta.Snapshot, opts Options, res *Result) error {
	if l.NewestCheckpoint(snap.Version) == snap.Version {
		res.Skipped = fmt.Sprintf("version %d already has a checkpoint", snap.Version)
		return nil
	}
	do := opts.Delta
	do.Now = opts.now()
	start := time.Now()
	info, err := checkpointwrite.WriteCheckpoint(ctx, t, snap, do)
	res.Duration = time.Since(start)
	if errors.Is(err, checkpointwrite.ErrCheckpointExists) {
		res.Skipped = fmt.Sprintf("version %d was checkpointed by another writer", snap.Version)
		return nil
	}
	if err != nil {
		return err
	}
	res.Checkpoint = info
	opts.logger().Info("checkpoint written", "table", t.URL, "version", info.Version, "key", info.Key,
		"actions", info.Actions, "bytes", info.SizeInBytes, "adds", info.NumAddFiles, "v2", info.V2,
		"duration", res.Duration.Round(time.Millisecond))
	return nil
}
