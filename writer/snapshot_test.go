package writer

import (
	"context"

	"github.com/compactord/compactord/delta"
)

// loadLatest loads the table's latest snapshot with the Delta core.
func loadLatest(ctx context.Context, tbl *delta.Table) (*delta.Snapshot, error) {
	return delta.LoadSnapshot(ctx, tbl, -1)
}
