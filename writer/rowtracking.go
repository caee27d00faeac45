package writer

import (
	"github.com/compactord/compactord/delta"
)

// withRowTracking sets up a job on a table whose row tracking is enabled:
// every output carries the materialized row id and row commit version
// columns (the job's schema is delta.RewriteSchema), and every source is
// read through the Delta core's FileScan with RowTracking, which yields
// each row's stable id and commit version (the source's materialized value,
// else baseRowId + physical index and defaultRowCommitVersion). The
// direct, pack and page-copy paths are off: they would copy a source's
// values as they are, and a source may lack the columns or hold nulls in
// them. Sorted jobs permute rows that already carry their ids, so their
// ids survive the permutation.
func withRowTracking(snap *delta.Snapshot, opts Options) (Options, error) {
	rt, err := delta.RowTrackingOf(snap)
	if err != nil {
		return opts, err
	}
	if rt.Materialize() {
		opts.rowTracking = true
		opts.forceScan = true
	}
	return opts, nil
}
