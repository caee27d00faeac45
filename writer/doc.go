// Package writer owns the streaming rewrite of parquet data files: reading
// sources through ranged reads, dropping deletion-vector rows, optional
// sorting with bounded memory, output sizing, Delta statistics for each
// output, and the composition record (where every source row landed) that
// reconciliation depends on.
//
// It must not commit anything: it returns what it wrote and can delete it.
package writer
