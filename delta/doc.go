// Package delta owns the Delta Lake table as compactord reads it: opening a
// table (URL schemes, drivers, read limits), listing and replaying the log
// (JSON commits, classic, multi-part and V2 checkpoints read from parquet,
// sidecars, _last_checkpoint, log compaction files), the Snapshot, the
// table-feature gate, row tracking, deletion-vector reading and writing,
// and the parquet nodes shared by scans and checkpoint writing. Checkpoint
// writing lives above it in delta/checkpointwrite, which reads the log
// through ReadCheckpointFile, ReadLastCheckpoint and ListLogFiles.
//
// The format pieces below it live in subpackages: delta/schema (types,
// schema JSON, column paths, physical names, logical values), delta/props
// (typed table properties), delta/stats (the Stats of an add and its
// parsing), delta/actions (actions and their JSON codec, partition values,
// protocol feature methods), delta/statscollect (computing statistics),
// delta/logpath (log file names, the _last_checkpoint document),
// delta/logstore (the log stores: put-if-absent per URL scheme, Delta's
// DynamoDB commit protocol, the bounded read of a log object) and
// delta/pq (parquet open, object reader, page guard, the panic guard).
// Scanning the live rows of data files lives above it in delta/scan.
//
// It must not know about policies or scheduling, or import
// delta/checkpointwrite or delta/scan.
package delta
