// Package tableop is the seam between the daemon and the table operations
// (compaction, retention, and the maintenance operations: checkpoint, log
// cleanup, vacuum, stats backfill). An operation is an Op built for one run
// from a table's policy by its Factory; the daemon's runner calls the
// factories in order and hands the scheduler one Result per operation.
//
// It owns the Op, Factory, Env and Result types. It must not know any
// particular operation or the writer (a policy's writer settings are
// policies.Policy.WriterOptions), and must not schedule anything.
package tableop
