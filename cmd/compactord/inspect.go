package main

import (
	"context"
	"fmt"
	"io"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/inspect"
	"github.com/compactord/compactord/internal/units"
)

// runInspect describes a table: `compactord inspect URL [--version N]
// [--json] [--small-file-size SIZE]`.
func runInspect(ctx context.Context, fs *commandFlags, args []string, stdout, stderr io.Writer) error {
	version := fs.versionVar("table version `N` to inspect (default: latest)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	small := fs.String("small-file-size", "", "files below this size count as small, e.g. 64MiB (units B, KiB/k, MiB/m, GiB/g; powers of 1024) (default: the planner's rule, min(1GiB, the table's target file size))")
	maxParts := fs.countVar("partitions", 20, "text output: list at most this many partitions (JSON lists all)")
	ctx, url, store, err := fs.parseTable(ctx, args, stderr)
	if err != nil {
		return err
	}
	threshold := int64(-1)
	if *small != "" {
		if threshold, err = units.ParseSize(*small); err != nil {
			return fmt.Errorf("%w: --small-file-size: %v", errUsage, err)
		}
	}
	t, err := store.open(ctx, url)
	if err != nil {
		return err
	}
	defer t.Close()
	rep, snap, err := inspect.Load(ctx, t, *version, threshold)
	if err != nil {
		return err
	}
	inspect.CountFooterRows(ctx, t, snap, rep)
	if *asJSON {
		return writeJSONTo(stdout, rep)
	}
	return inspect.WriteText(stdout, rep, *maxParts)
}

// openSnapshot opens the table at url with store's options and loads
// version (< 0: latest).
func openSnapshot(ctx context.Context, store *storeFlags, url string, version int64) (*delta.Table, *delta.Snapshot, error) {
	t, err := store.open(ctx, url)
	if err != nil {
		return nil, nil, err
	}
	snap, err := delta.LoadSnapshot(ctx, t, version)
	if err != nil {
		t.Close()
		return nil, nil, err
	}
	return t, snap, nil
}
