package main

import (
	"context"
	"io"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/redact"
)

// runOnTable is the body of a command that runs one operation on one table
// (checkpoint, cleanup-log, vacuum, expire, backfill-stats): it opens the
// table at url with open, runs op on it, closes it, and prints op's result:
// as indented JSON with asJSON, otherwise with text. What it prints passes
// redact.Writer: results name the table by its URL, credentials and all.
func runOnTable[R any](ctx context.Context, open func(context.Context, string) (*delta.Table, error), url string,
	op func(*delta.Table) (R, error), asJSON bool, stdout io.Writer, text func(io.Writer, R)) error {
	t, err := open(ctx, url)
	if err != nil {
		return err
	}
	defer t.Close()
	res, err := op(t)
	if err != nil {
		return err
	}
	stdout = redact.Writer(stdout)
	if asJSON {
		return writeJSONTo(stdout, res)
	}
	text(stdout, res)
	return nil
}
