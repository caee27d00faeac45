// Package compaction is the compaction table operation: snapshot -> plan
// (planner) -> rewrite (writer) -> commit (commit), shared by `compactord
// compact`, `plan`, `run-plan` and the daemon. It owns the run's options
// and result, the resolution of a plan's jobs against the snapshot it was
// made for, the Executor seam that runs the jobs (Local in this process; a
// remote one elsewhere), the commits of finished jobs (once at the end, or
// in batches as they finish), and the abandonment of rewrite outputs that
// no commit published.
//
// It must not schedule anything (when a table runs is the scheduler's
// business) and holds no state between runs.
package compaction
