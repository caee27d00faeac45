package writer

import (
	"github.com/compactord/compactord/delta"
)

// SortSpec asks for rows ordered by a space-filling curve over columns
// (physical names of top-level or nested leaf columns).
type SortSpec struct {
	// Columns are the clustering columns as physical-name paths.
	Columns [][]string
	// Curve is "hilbert" or "zorder".
	Curve string
}

// Job is one rewrite: a set of source files of one partition written into one
// or more outputs.
type Job struct {
	// ID names the job in logs and results.
	ID string
	// Sources are the live add actions to rewrite, in the order to write them.
	Sources []*delta.Add
	// PartitionValues of all sources (they share one partition).
	PartitionValues map[string]*string
	// Sort, when set, permutes rows (clustering); nil keeps source order.
	Sort *SortSpec
	// Tags are added to every output's add action (e.g. clustering tags).
	Tags map[string]string
	// ClusteringProvider is set on outputs when non-empty.
	ClusteringProvider string
}

// SourceRun records where one source's live rows landed: one contiguous run
// of one output (a source is never split across outputs).
type SourceRun struct {
	// Source is the source add action as read (path as in the log, read-time DV).
	Source *delta.Add
	// Output is the index into Result.Outputs of the output holding the run.
	Output int
	// RowOffsetInTarget is the output row index of the source's first live row.
	RowOffsetInTarget int64
	// SourceNumPhysicalRecords is the source's physical row count.
	SourceNumPhysicalRecords int64
	// LiveRows is how many rows the source contributed.
	LiveRows int64
}

// Output is one written data file, not yet committed.
type Output struct {
	// Add is the add action to commit (dataChange=false, stats set).
	Add *delta.Add
	// NumRecords is the number of rows written.
	NumRecords int64
}

// Result is what a job wrote.
type Result struct {
	Job     *Job
	Outputs []Output
	// Composition lists the runs in write order. For sorted jobs it is
	// empty and Origins is set instead.
	Composition []SourceRun
	// Origins maps each output row back to its source for sorted jobs.
	Origins      *OriginMap
	BytesRead    int64
	BytesWritten int64
}

// OriginMap maps each output row (output index, row index) to its source
// (index into Job.Sources) and that source's physical row index. Large maps
// spill to a temp file.
type OriginMap struct {
	// filled in by the sorted-rewrite change
}
