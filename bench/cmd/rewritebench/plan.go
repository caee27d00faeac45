package main

import (
	"fmt"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/planner"
	"github.com/compactord/compactord/writer"
)

// plannedJobs plans the table's rewrite with the real planner, as a
// compaction run would, and returns the plan's jobs for the writer: each
// job's sources in the order the plan gives them (for the lightweight
// tier, the (min, max) order of the column it picked). columns are the
// clustering columns the plan uses (the table's when nil); every file
// smaller than target is a candidate.
func plannedJobs(snap *delta.Snapshot, strategy planner.Strategy, columns [][]string, lightweightColumn []string, target int64) ([]*writer.Job, *planner.CompactionPlan, error) {
	pl, err := planner.Plan(snap, planner.Policy{
		Strategy:          strategy,
		TargetFileSize:    target,
		MinFileSize:       target,
		ClusteringColumns: columns,
		LightweightColumn: lightweightColumn,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("plan %s at version %d: %w", strategy, snap.Version, err)
	}
	js := make([]*writer.Job, 0, len(pl.Jobs))
	for _, pj := range pl.Jobs {
		wj := &writer.Job{ID: pj.ID, Sources: pj.Sources, PartitionValues: pj.PartitionValues, Tags: pj.Tags,
			ClusteringProvider: pj.ClusteringProvider, TargetFileSize: pj.TargetFileSize}
		if pj.Sort != nil {
			wj.Sort = &writer.SortSpec{Columns: pj.Sort.Columns, Curve: pj.Sort.Curve, Buckets: pj.Sort.Buckets}
		}
		js = append(js, wj)
	}
	return js, pl, nil
}
