package writer

import (
	"context"
	"fmt"

	"github.com/compactord/compactord/delta"
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
	Sources []*delta.Add
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

// SourceRun records where one source's live rows landed: one contiguous run
// of one output (a source is never split across outputs). Output row
// RowOffsetInTarget+k holds the source's k-th live row in physical order, so a
// source's physical row i (not in its read-time DV) is at output row
// RowOffsetInTarget + i - |{d in read-time DV : d < i}|.
type SourceRun struct {
	// Source is the source add action as read (path as in the log, read-time DV).
	Source *delta.Add
	// Output is the index into Result.Outputs of the output holding the run.
	// A source with no live rows gets the output it would have landed in
	// (LiveRows 0); it is -1 only when the whole job wrote no output because
	// no source had a live row.
	Output int
	// RowOffsetInTarget is the output row index of the source's first live row.
	RowOffsetInTarget int64
	// SourceNumPhysicalRecords is the source's physical row count (stats
	// numRecords, else the parquet footer), including DV-deleted rows.
	SourceNumPhysicalRecords int64
	// LiveRows is how many rows the source contributed; the writer checked
	// LiveRows == SourceNumPhysicalRecords - Source.DeletionVector.Cardinality.
	LiveRows int64
}

// Output is one written data file, not yet committed.
type Output struct {
	// Add is the add action to commit: Path is the URL-encoded key relative
	// to the table root, partition values copied from the sources, size and
	// modificationTime of the object, dataChange=false, stats computed from
	// the rows written (tightBounds=true when the protocol supports deletion
	// vectors, absent otherwise, as Spark writes them), the job's tags and
	// clustering provider. Row-tracking fields are left for the committer.
	Add *delta.Add
	// Key is the object key (Add.Path decoded).
	Key string
	// NumRecords is the number of rows written.
	NumRecords int64
}

// Result is what a job wrote. Until it is committed the outputs are orphans:
// call Abort to delete them when the attempt is abandoned.
type Result struct {
	// Job is the job that produced the result.
	Job *Job
	// Outputs in the order they were written.
	Outputs []Output
	// Composition lists one run per source, in write order (Job.Sources
	// order). For sorted jobs it is empty and Origins is set instead.
	Composition []SourceRun
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

	table   *delta.Table
	written *tracker
}

// Abort deletes every object the job wrote (and releases the origin map of
// a sorted job). It is safe to call more than once and on a nil Result.
func (r *Result) Abort(ctx context.Context) error {
	if r == nil {
		return nil
	}
	_ = r.Origins.Close() // sorted jobs: the row permutation is no longer needed
	if r.written == nil || r.table == nil {
		return nil
	}
	if err := r.written.deleteAll(ctx, r.table.Bucket); err != nil {
		return fmt.Errorf("abort job %s: %w", r.Job.ID, err)
	}
	return nil
}

// OriginMap is defined in origin.go (sorted rewrites).
