package commit

import (
	"github.com/compactord/compactord/composition"
	"github.com/compactord/compactord/delta/actions"
)

// CompactionJob is one rewritten job handed to CommitCompaction: the
// sources it read, the files it wrote (not yet committed) and where the
// sources' rows landed. The compaction operation builds it from the
// writer's result; this package never sees the writer.
type CompactionJob struct {
	// ID names the job in logs and in Outcome.Dropped.
	ID string
	// Sources are the add actions the job read, as read (read-time DVs), in
	// write order; index k is source k of Origins.
	Sources []*actions.Add
	// Outputs are the written files, in write order.
	Outputs []JobOutput
	// Runs lists one run per source for jobs that kept the sources' row
	// order (composition.Check must pass, else the job is dropped).
	Runs []composition.Run
	// Sorted is set when the job permuted rows: there are no runs, and a
	// concurrent DV update of a source is reconciled through Origins, or
	// drops the job when Origins is nil.
	Sorted bool
	// Origins says where each source row of a sorted job landed.
	Origins composition.Origins
}

// JobOutput is one file a job wrote.
type JobOutput struct {
	// Add is the add action to commit (dataChange=false, stats, tags).
	Add *actions.Add
	// Rows is the number of rows written.
	Rows int64
}

func (j *CompactionJob) sourcePaths() []string {
	out := make([]string, 0, len(j.Sources))
	for _, s := range j.Sources {
		out = append(out, s.Path)
	}
	return out
}

// outputRows returns the rows written to each output, in output order.
func (j *CompactionJob) outputRows() []int64 {
	rows := make([]int64, len(j.Outputs))
	for i, o := range j.Outputs {
		rows[i] = o.Rows
	}
	return rows
}
