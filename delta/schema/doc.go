// Package schema owns the Delta table schema as data: the DataType,
// StructType and StructField types, the schema JSON codec (ParseSchema and
// its writer), column paths (ParseColumnPath, FormatColumnPath), column
// mapping's physical names and field ids, and the logical value types rows
// decode to (Date, Timestamp, TimestampNTZ, Decimal, LogicalStruct,
// LogicalMap, AppendJSON).
//
// It must not know about actions, table properties, the log or parquet
// files: it is the lowest layer of delta/... and imports nothing of ours.
package schema
