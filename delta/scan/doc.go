// Package scan owns reading the rows of a table's data files: FileScan (a
// data file's live rows and columns, its deletion vector applied, values
// converted to the types compactord writes), the mapping of a Delta schema
// to the parquet schema of data files (DataSchema, DataSchemaOf,
// RewriteSchema), RowDecoder (parquet rows to logical values) and
// ScanLogicalRows.
//
// It reads tables through root delta (Table, Snapshot, deletion vectors);
// root delta must not import it. It must not write files or commits, and
// must not know about policies or scheduling.
package scan
