// Package commit owns compactord's optimistic transactions on a Delta table:
// put-if-absent commits, conflict detection against the commits that landed
// after a transaction's read version, forward reconciliation of concurrent
// deletion-vector DML onto compacted outputs, partial commits (dropping only
// the jobs that truly conflict), bounded retries and in-commit timestamps.
// Data-changing transactions (DML: retention's deletes, the demo's) go
// through DML; the test tables' DV deletes live in test support
// (internal/testutil/tabletest.DeleteRows), not here.
//
// A compaction (CommitCompaction) commits only commitInfo, remove
// (dataChange=false) and add (dataChange=false) actions, so Delta checks it at
// snapshot isolation. Each winner after the read version is classified once:
// protocol/metadata change -> the attempt is abandoned (ErrMetadataChanged);
// a source removed and re-added at the same path with a new DV -> the new
// deletions are remapped onto the output (composition.Forward) and our tombstone is
// re-pointed at the winner's post-image; a source removed otherwise -> only
// its job is dropped; anything else -> no conflict. Sorted (clustering) jobs
// permute rows, so their deletions are located through the writer's origin
// map (composition.Sorted) instead; without a map such a job is dropped.
//
// Tombstones carry Databricks' compactedInto/compactionInfo tags so other
// engines can reconcile against our rewrite, except on re-pointed tombstones:
// their DV is the winner's, not the one the run offsets were computed with,
// so a reader using the tag would misplace rows. Without the tag such a
// reader falls back to a conflict, which is safe.
//
// Jobs arrive as CompactionJob values (sources, outputs, the composition
// record of package composition); this package never imports the writer.
// It deletes nothing it did not commit either: the DV files it writes are
// tracked in the caller's attempt.Objects, the commit loop marks the
// objects a committed (or possibly committed) version references as kept,
// and the operation that owns the attempt cleans up the rest.
//
// It must not plan or rewrite data, and only decides what can be committed
// and how.
package commit
