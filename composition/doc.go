// Package composition owns the composition record of a compaction: where
// each source file's live rows landed in the outputs. It holds the run
// record (Run), its codec for the compactedInto/compactionInfo tags that a
// compaction writes on a source's remove action (the format Databricks
// Runtime writes, read back by other engines and by our own reverse
// reconciliation), the checks a job's runs must pass before they are
// trusted, and the two remaps that translate a concurrent writer's
// deletions on a source into deletions on the outputs: Forward for
// order-preserving jobs (one contiguous run per source) and Sorted for jobs
// that permuted rows, through the small Origins interface that the writer's
// origin map implements.
//
// It must not know storage, the Delta log or any file format: it works on
// paths, counts and roaring bitmaps, so that the writer (which captures the
// record) and the committer (which encodes, decodes and remaps it) share one
// definition without importing each other.
package composition
