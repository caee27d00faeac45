// Package commit owns compactord's optimistic transactions on a Delta table:
// put-if-absent commits, conflict detection against the commits that landed
// after a transaction's read version, forward reconciliation of concurrent
// deletion-vector DML onto compacted outputs, partial commits (dropping only
// the jobs that truly conflict), bounded retries and in-commit timestamps.
// It also holds a deletion-vector DELETE writer used by tests and the demo.
//
// It must not plan or rewrite data: jobs arrive already written by package
// writer, and this package only decides what can be committed and how.
package commit
