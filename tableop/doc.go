// Package tableop is the seam between the daemon and the table operations
// (compaction, retention, and the maintenance operations: checkpoint, log
// cleanup, vacuum, stats backfill). An operation is an Op built for one run
// from a table's policy by its Factory; the daemon's runner calls the
// factories in order and hands the scheduler one Result per operation.
//
// It owns the Op, Factory, Env, Result and Hold types. Op and Factory are
// generic in the policy and the table handle: each operation's package
// binds them to policies.Policy and *delta.Table, so that this package
// knows no policy file, no table or file format and no planner (a test
// runs `go list -deps`). It must not know any particular operation or the
// writer, and must not schedule anything.
package tableop
