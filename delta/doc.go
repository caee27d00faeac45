// Package delta owns the Delta Lake table format as compactord sees it: log
// actions, log replay (JSON commits, classic, multi-part and V2 checkpoints,
// sidecars, _last_checkpoint, log compaction files), the Snapshot, schema and
// column mapping, statistics parsing and computing rules, the deletion-vector
// codec, scanning the live rows of a data file, the log store (put-if-absent
// per URL scheme, or Delta's DynamoDB commit protocol for s3:// tables shared
// with S3DynamoDBLogStore writers), the table-feature gate, and checkpoint writing (classic
// single-file parquet with Spark's schema, UUID-named V2 with sidecars, the
// V2 compatibility checkpoint, _last_checkpoint).
//
// It must not know about policies or scheduling.
package delta
