package writer

import (
	"github.com/compactord/compactord/composition"
	"github.com/compactord/compactord/delta/actions"
)

// SortSpec asks for rows ordered by a space-filling curve over columns
// (physical names of top-level or nested leaf columns).
type SortSpec struct {
	// Columns are the clustering columns as physical-name paths.
	Columns [][]string
	// Curve is "hilbert" or "zorder".
	Curve string
	// Buckets caps the range buckets of each column (in Columns order);
	// nil, or an entry <= 0, means SortOptions.Buckets. The planner asks
	// for fewer buckets on a column of which the job covers only a slice.
	Buckets []int
}

// Job is one rewrite: a set of source files of one partition written into one
// or more outputs.
type Job struct {
	// ID names the job in logs and results.
	ID string
	// Sources are the live add actions to rewrite, in the order to write them.
	// All must share one partition.
	Sources []*actions.Add
	// PartitionValues of all sources (they share one partition). nil: taken
	// from the first source. Copied verbatim onto every output.
	PartitionValues map[string]*string
	// Sort, when set, permutes rows (clustering); nil keeps source order.
	Sort *SortSpec
	// Tags are added to every output's add action (e.g. clustering tags).
	Tags map[string]string
	// ClusteringProvider is set on outputs when non-empty.
	ClusteringProvider string
	// TargetFileSize, when positive, is this job's output size: it overrides
	// Options.TargetFileSize (a plan records one per job).
	TargetFileSize int64
}

// Output is one written data file, not yet committed.
type Output struct {
	// Add is the add action to commit: Path is the URL-encoded key relative
	// to the table root, partition values copied from the sources, size and
	// modificationTime of the object, dataChange=false, stats computed from
	// the rows written (tightBounds=true when the protocol supports deletion
	// vectors, absent otherwise, as Spark writes them), the job's tags and
	// clustering provider. Row-tracking fields are left for the committer.
	Add *actions.Add
	// Key is the object key (Add.Path decoded).
	Key string
	// NumRecords is the number of rows written.
	NumRecords int64
}

// Result is what a job wrote. Until it is committed the outputs are orphans;
// their keys are in the attempt.Objects the job was run with, whose owner
// deletes them when the attempt is abandoned.
type Result struct {
	// Job is the job that produced the result.
	Job *Job
	// Outputs in the order they were written.
	Outputs []Output
	// Composition lists one run per source, in write order (Job.Sources
	// order): where its live rows landed (Source is the source's path as in
	// the log, Target the output's). A source is never split across
	// outputs. For sorted jobs it is empty and Origins is set instead.
	Composition []composition.Run
	// Origins maps each output row back to its source for sorted jobs.
	Origins *OriginMap
	// Sort describes the external sort of a sorted job (nil otherwise).
	Sort *SortStats
	// BytesRead is the total size of the source objects.
	BytesRead int64
	// BytesWritten is the total size of the outputs.
	BytesWritten int64
	// CopiedRowGroups counts source row groups copied page-for-page (the
	// fast path) rather than decoded and re-encoded.
	CopiedRowGroups int
	// PackedSources counts small DV-free sources of the data schema written
	// in packs, several per output row group, column by column.
	PackedSources int
	// DirectSources counts sources read without schema conversion (their
	// parquet schema is the table's data schema); the others went through
	// the Delta core's FileScan.
	DirectSources int
}

// OriginMap is defined in origin.go (sorted rewrites).
