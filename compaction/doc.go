// Package compaction is the compaction table operation: snapshot -> plan
// (planner) -> rewrite (writer) -> commit (commit), shared by `compactord
// compact`, `plan`, `run-plan` and the daemon. It owns the run's options
// and result, the resolution of a plan's jobs against the snapshot it was
// made for, and the abandonment of rewrite outputs when a run is
// cancelled before its commit.
//
// It must not schedule anything (when a table runs is the scheduler's
// business) and holds no state between runs.
package compaction
