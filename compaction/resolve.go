package compaction

import (
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/planner"
	"github.com/compactord/compactord/writer"
)

// WriterJobs resolves a plan's jobs against the snapshot they were planned
// on, by source path (so a plan read back from JSON works), as a local run
// does: fanout's workers rewrite their unit's jobs through it, so a unit
// rewritten in another process is the same rewrite.
func WriterJobs(snap *delta.Snapshot, pl *planner.CompactionPlan) ([]*writer.Job, error) {
	return writerJobs(snap, pl)
}
