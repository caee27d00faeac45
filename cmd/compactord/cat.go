package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/compactord/compactord/delta/scan"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/schema"
)

// runCat prints a table's live rows as JSON lines with logical column
// names: `compactord cat URL [--version N] [--limit N] [--time-zone Z]
// [--row-ids]`. --row-ids adds each row's _row_id and _row_commit_version
// (tables with row tracking enabled).
func runCat(ctx context.Context, fs *commandFlags, args []string, stdout, stderr io.Writer) error {
	version := fs.versionVar("table version `N` to read (default: latest)")
	limit := fs.Int64("limit", 0, "stop after this many rows (0: all)")
	rowIDs := fs.Bool("row-ids", false, "add each row's stable _row_id and _row_commit_version (row tracking must be enabled)")
	zone := fs.String("time-zone", "UTC", "zone of zone-less timestamp partition values (the writer's session zone)")
	ctx, url, store, err := fs.parseTable(ctx, args, stderr)
	if err != nil {
		return err
	}
	if *limit < 0 {
		return fmt.Errorf("%w: --limit must be >= 0", errUsage)
	}
	loc, err := time.LoadLocation(*zone)
	if err != nil {
		return fmt.Errorf("%w: --time-zone: %v", errUsage, err)
	}
	t, snap, err := openSnapshot(ctx, store, url, *version)
	if err != nil {
		return err
	}
	defer t.Close()
	w := bufio.NewWriterSize(stdout, 64<<10)
	var line []byte
	_, err = scan.ScanLogicalRows(ctx, t, snap, scan.LogicalScanOptions{Limit: *limit, Location: loc, RowIDs: *rowIDs},
		func(_ *actions.Add, row *schema.LogicalStruct) error {
			line = schema.AppendJSON(line[:0], row)
			line = append(line, '\n')
			_, werr := w.Write(line)
			return werr
		})
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return err
}
