// Package demo is `compactord demo`: an ingestion job's small Delta table
// of (id, name, amount) rows written the way an appender would (real
// parquet files, add actions with stats, put-if-absent commits), the daemon
// run on it in-process with a deletion-vector DELETE racing its compaction,
// and a content check of every live row afterwards. The end-to-end test of
// the binary writes its tables with the same functions.
//
// It must not touch any table but the one it creates, or be imported by the
// operations, the scheduler or the daemon.
package demo
