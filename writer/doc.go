// Package writer owns the streaming rewrite of parquet data files: reading
// sources through ranged reads, dropping deletion-vector rows, optional
// sorting with bounded memory, output sizing, Delta statistics for each
// output, and the composition record (where every source row landed) that
// reconciliation depends on.
//
// Rewrite runs one Job; RewriteAll runs many, a bounded number at once.
// A source is read one of four ways, all yielding the same rows:
//   - through the Delta core's FileScan, which converts file rows to the
//     table's data schema (narrow types, INT96, other layouts);
//   - directly, when the file's parquet schema is the data schema and it
//     has a deletion vector: rows go to the output as read, minus the
//     deleted ones;
//   - in a pack, when such a source has no deletion vector and small row
//     groups (most small files): consecutive ones are written together as
//     one row group, which parquet-go re-encodes column by column;
//   - by page copy, when it has no deletion vector and large row groups:
//     whole row groups go to parquet-go's WriteRowGroup.
//
// Packed and copied sources get their statistics column by column (from
// page bounds where exact); no row is assembled for them.
//
// A sorted (clustering) job goes column by column too where it can
// (sort_columns.go): its clustering columns read whole, a curve key per row,
// the (key, row) entries sorted in parallel, every column gathered by the
// permutation into the outputs' row groups on GOMAXPROCS workers, and the
// origin map filled from the permutation; past SortOptions.ColumnMemoryBytes
// it sorts runs of sources that fit, spills them column-wise to temp files
// and merges them (sort_spill.go). Jobs it cannot take (repeated or INT96
// columns, keys over 8 bytes, DisableCopyPath) go row by row through the
// external sort (sort.go, sort_extern.go), which spills; all of them write
// the rows in the same order.
//
// Reading and writing of a source run on two goroutines. Memory is bounded
// by Options (page size, read buffers, batches in flight); the pages of the
// row group being built spill to unlinked temp files.
//
// It must not commit anything, and it deletes nothing it wrote: every output
// key is tracked in the caller's attempt.Objects before the object is
// created, and the operation that owns the attempt deletes what it does not
// commit, on every exit path (failed jobs included).
package writer
