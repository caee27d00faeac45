// Package checkpointwrite owns writing checkpoints: WriteCheckpoint
// (classic and V2 content, multi-part, sidecars, the checkpoint's parquet
// schema and rows with stats_parsed and partitionValues_parsed),
// WriteCompatCheckpoint (the classic-named copy of a UUID-named V2
// checkpoint) and the _last_checkpoint it writes or repairs
// (RepairLastCheckpoint, never backwards).
//
// It must not be imported by root delta or by anything below the
// operations: only checkpoint/, logcleanup/, cmd and tests use it. It
// reads the log only through root delta.
package checkpointwrite
