package main

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/schema"
	"github.com/compactord/compactord/delta/stats"
	"github.com/compactord/compactord/planner"
)

// The lightweight plan's one job reads its sources in the (min, max) order
// of the column, not in the log's (path) order, and sorts no rows.
func TestPlannedLightweightJobReadsTheSourcesInTheColumnsOrder(t *testing.T) {
	snap := &delta.Snapshot{Version: 3, Schema: &schema.StructType{Fields: []*schema.StructField{
		{Name: "ts", Type: &schema.DataType{Name: "long"}},
		{Name: "v", Type: &schema.DataType{Name: "long"}},
	}}}
	// Paths in one order, ts ranges in another.
	for i, lo := range []int64{300, 100, 400, 0, 200} {
		n := int64(10)
		snap.Files = append(snap.Files, &actions.Add{
			Path: fmt.Sprintf("part-%d.parquet", i), PartitionValues: map[string]*string{}, Size: 1000,
			ParsedStats: &stats.Stats{NumRecords: &n,
				MinValues: map[string]any{"ts": json.Number(fmt.Sprint(lo)), "v": json.Number("0")},
				MaxValues: map[string]any{"ts": json.Number(fmt.Sprint(lo + 99)), "v": json.Number("9")}},
		})
	}
	js, pl, err := plannedJobs(snap, planner.StrategyLightweight, [][]string{{"ts"}}, []string{"ts"}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(js) != 1 || js[0].Sort != nil {
		t.Fatalf("%d jobs (first sorted: %v), want one unsorted job", len(js), len(js) > 0 && js[0].Sort != nil)
	}
	var got []string
	for _, s := range js[0].Sources {
		got = append(got, s.Path)
	}
	want := []string{"part-3.parquet", "part-1.parquet", "part-4.parquet", "part-0.parquet", "part-2.parquet"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sources %v, want %v", got, want)
	}
	if pl.Lightweight == nil || pl.Lightweight.Column != "ts" {
		t.Errorf("lightweight %+v, want ordered by ts", pl.Lightweight)
	}
}
