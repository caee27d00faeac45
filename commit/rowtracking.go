package commit

import (
	"maps"

	"github.com/compactord/compactord/delta"
)

// tagRowTrackingPreserved is the commitInfo tag saying whether a commit
// preserved the stable row ids and row commit versions of the rows it
// copied (PROTOCOL.md "Writer Requirements for Row Tracking").
const tagRowTrackingPreserved = "delta.rowTracking.preserved"

// rowTrackingTags returns tags with delta.rowTracking.preserved=true when
// the snapshot's row tracking is enabled: the writer then materializes
// every copied row's stable id and commit version, and a DV-only delete
// copies no row. Otherwise tags are returned as given (Spark's
// addPreservedRowTrackingTagIfNotSet; DBR's OPTIMIZE writes "false" on
// tables without row tracking, which callers pass in).
func rowTrackingTags(snap *delta.Snapshot, tags map[string]string) map[string]string {
	if rt, err := delta.RowTrackingOf(snap); err != nil || !rt.Materialize() {
		return tags // an invalid state fails the commit loop with its error
	}
	out := maps.Clone(tags)
	if out == nil {
		out = map[string]string{}
	}
	out[tagRowTrackingPreserved] = "true"
	return out
}
