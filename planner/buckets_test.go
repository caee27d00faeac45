package planner

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/schema"
	"github.com/compactord/compactord/delta/stats"
)

// streamSnapshot is a table clustered by (ts, key): a full Z-cube of old
// files, each a narrow slice of ts over the whole key range, plus new
// unclustered files of the next slice; withoutStats adds a new file
// without stats.
func streamSnapshot(withoutStats bool) *delta.Snapshot {
	snap := &delta.Snapshot{Version: 9, Domains: map[string]actions.DomainMetadata{
		"delta.clustering": {Domain: "delta.clustering", Configuration: `{"clusteringColumns":[["ts"],["key"]]}`},
	}}
	snap.Schema = &schema.StructType{Fields: []*schema.StructField{
		{Name: "ts", Type: &schema.DataType{Name: "long"}},
		{Name: "key", Type: &schema.DataType{Name: "long"}},
	}}
	liquid := ClusteringProviderLiquid
	file := func(path string, size, tsLo, tsHi int64) *actions.Add {
		n := int64(100)
		return &actions.Add{Path: path, Size: size, ParsedStats: &stats.Stats{NumRecords: &n,
			MinValues: map[string]any{"ts": json.Number(fmt.Sprint(tsLo)), "key": json.Number("0")},
			MaxValues: map[string]any{"ts": json.Number(fmt.Sprint(tsHi)), "key": json.Number("999999")}}}
	}
	for i := int64(0); i < 90; i++ {
		a := file(fmt.Sprintf("old-%02d.parquet", i), 1000, i*10, i*10+9)
		a.ClusteringProvider = &liquid
		a.Tags = map[string]string{TagZCubeID: "old", TagZCubeZOrderBy: `["ts","key"]`}
		snap.Files = append(snap.Files, a)
	}
	for i := int64(0); i < 10; i++ {
		snap.Files = append(snap.Files, file(fmt.Sprintf("new-%02d.parquet", i), 1000, 900+i, 900+i))
	}
	if withoutStats {
		snap.Files = append(snap.Files, &actions.Add{Path: "new-nostats.parquet", Size: 1000})
	}
	return snap
}

func TestZCubeBucketsFollowTheJobsShareOfEachColumn(t *testing.T) {
	for _, tc := range []struct {
		name         string
		withoutStats bool
		full         bool
		want         []int
	}{
		// 10 of 100 equal files hold the new ts slice: 100 buckets; every
		// file spans the whole key range: 1000.
		{"incremental job over the newest slice", false, false, []int{100, 1000}},
		{"a source without stats keeps every bucket", true, false, []int{1000, 1000}},
		{"full re-clustering covers everything", false, true, []int{1000, 1000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Policy{Strategy: StrategyZCube, TargetFileSize: 1 << 20, MinFileSize: 1 << 20, MinCubeSize: 100_000, Full: tc.full}
			pl, err := Plan(streamSnapshot(tc.withoutStats), p)
			if err != nil {
				t.Fatal(err)
			}
			if len(pl.Jobs) != 1 || pl.Jobs[0].Sort == nil {
				t.Fatalf("want one sorted job, got %d jobs", len(pl.Jobs))
			}
			if got := pl.Jobs[0].Sort.Buckets; fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("buckets %v, want %v", got, tc.want)
			}
		})
	}
}
