package vacuum

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/deletegate"
)

// SweepOptions configure Sweep.
type SweepOptions struct {
	// Window is how old a temp leftover must be before it is deleted; 0
	// means the table's delta.deletedFileRetentionDuration (as vacuum).
	Window time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives what was deleted (default null).
	Logger hclog.Logger
	// Snapshots loads the latest snapshot when a root-level leftover needs
	// checking against the log, and for the table's retention (default
	// delta.LoadSnapshot).
	Snapshots func(ctx context.Context, t *delta.Table, version int64) (*delta.Snapshot, error)
}

// SweepResult is what Sweep found and deleted.
type SweepResult struct {
	// Found counts temp leftovers older than the window; Deleted those
	// deleted (a file already gone is not counted); Bytes their size.
	Found, Deleted, Bytes int64
	// Keys are the deleted keys.
	Keys []string
	// Refused counts the leftovers the deletion gate refused (logged).
	Refused int64
}

// Sweep is the cheap sweep of temp leftovers the daemon runs on every run
// of a table without a vacuum block: one shallow listing each of the table
// root, _delta_log/ and _compactord/, and a delete of every file that
// IsTempLeftover and is older than the window. A root-level leftover is
// deleted only when no live add or tombstone of the latest snapshot names
// it. Leftovers inside partition directories need the full listing of a
// full vacuum. It runs the same protocol and catalog checks as Run.
func Sweep(ctx context.Context, t *delta.Table, opts SweepOptions) (*SweepResult, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Snapshots == nil {
		opts.Snapshots = delta.LoadSnapshot
	}
	l, err := newLister(t)
	if err != nil {
		return nil, err
	}
	snap, err := opts.Snapshots(ctx, t, -1)
	if err != nil {
		return nil, fmt.Errorf("sweep %s: load snapshot: %w", t.URL, err)
	}
	if err := checkTable(t, snap); err != nil {
		return nil, err
	}
	window := opts.Window
	if window <= 0 {
		if window, err = TableRetention(snap); err != nil {
			return nil, fmt.Errorf("sweep %s: %w", t.URL, err)
		}
	}
	cutoff := opts.Now().Add(-window).UnixMilli()
	var found []object
	collect := func(o object) error {
		if IsTempLeftover(o.key) && o.modTime.UnixMilli() < cutoff {
			found = append(found, o)
		}
		return nil
	}
	for _, dir := range append([]string{""}, tempSweepDirs...) {
		if err := l.shallow(ctx, dir, collect); err != nil {
			return nil, fmt.Errorf("sweep %s: %w", t.URL, err)
		}
	}
	res := &SweepResult{Found: int64(len(found))}
	if len(found) == 0 {
		return res, nil
	}
	rs, err := newResolver(t.URL)
	if err != nil {
		return nil, err
	}
	refs, err := collectReferences(snap, rs, 0)
	if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", t.URL, err)
	}
	c := newMemCandidates()
	for _, o := range found {
		if _, named := refs.valid[o.key]; named {
			continue
		}
		if err := c.add(File{Key: o.key, Size: o.size, Kind: KindTemp}); err != nil {
			return nil, err
		}
	}
	gate := deletegate.New(t.Bucket, deletegate.Options{Table: t.URL, Logger: opts.Logger, LocalRoot: deletegate.LocalRootOf(t.URL),
		Referenced: refs.isValid})
	st, err := deleteAll(ctx, gate, c, 8, func(f File) { res.Keys = append(res.Keys, f.Key) }, nil)
	res.Deleted, res.Bytes, res.Refused = st.files.Load(), st.bytes.Load(), st.refused.Load()
	if res.Deleted > 0 {
		opts.Logger.Info("swept temp leftovers of killed writes", "table", t.URL, "deleted", res.Deleted, "window", window)
	}
	if err != nil {
		return res, fmt.Errorf("sweep %s: %w", t.URL, err)
	}
	return res, nil
}
