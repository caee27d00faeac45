package planner

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/schema"
)

// tieredSnapshot is a table clustered by k with one file per partial cube
// (cube i has the given logical size) and, when uncl > 0, one unclustered
// file of that size.
func tieredSnapshot(cubes []int64, uncl int64) *delta.Snapshot {
	snap := &delta.Snapshot{Version: 3, Domains: map[string]actions.DomainMetadata{
		"delta.clustering": {Domain: "delta.clustering", Configuration: `{"clusteringColumns":[["k"]]}`},
	}}
	snap.Schema = &schema.StructType{Fields: []*schema.StructField{{Name: "k", Type: &schema.DataType{Name: "long"}}}}
	liquid := ClusteringProviderLiquid
	for i, size := range cubes {
		snap.Files = append(snap.Files, &actions.Add{
			Path: fmt.Sprintf("cube-%02d.parquet", i), Size: size, ClusteringProvider: &liquid,
			Tags: map[string]string{TagZCubeID: fmt.Sprintf("c%02d", i), TagZCubeZOrderBy: `["k"]`},
		})
	}
	if uncl > 0 {
		snap.Files = append(snap.Files, &actions.Add{Path: "new.parquet", Size: uncl})
	}
	return snap
}

func TestSizeTiersMergeOnlyFullTiers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cubes []int64
		uncl  int64
		min   int
		want  []string // per job: its sources' names, sorted, space-separated
	}{
		{"new data alone while its tier is short", []int64{100, 110}, 90, 4, []string{"new"}},
		{"new data completes its tier", []int64{100, 110, 120}, 90, 4, []string{"cube-00 cube-01 cube-02 new"}},
		{"a full tier of old cubes merges beside the new data", []int64{1000, 1100, 1200, 1300, 100}, 90, 4, []string{"new", "cube-00 cube-01 cube-02 cube-03"}},
		{"tiers split where a size exceeds 1.5x the tier's average", []int64{100, 140, 400, 500}, 120, 3, []string{"cube-00 cube-01 new"}},
		{"no new data: the quiet partition merges every partial cube", []int64{300, 310, 10}, 0, 4, []string{"cube-00 cube-01 cube-02"}},
		{"delta's behaviour merges everything", []int64{100, 5000}, 90, -1, []string{"cube-00 cube-01 new"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Policy{Strategy: StrategyZCube, TargetFileSize: 1 << 20, MinFileSize: 1 << 20, MinCubeSize: 1 << 40, CubeMergeMinCubes: tc.min}
			pl, err := Plan(tieredSnapshot(tc.cubes, tc.uncl), p)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, j := range pl.Jobs {
				var names []string
				for _, s := range j.SourcePaths {
					names = append(names, strings.TrimSuffix(s, ".parquet"))
				}
				slices.Sort(names)
				got = append(got, strings.Join(names, " "))
			}
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("jobs %q, want %q", got, want)
			}
		})
	}
}

func TestCubeMergeMinCubesOfOneIsInvalid(t *testing.T) {
	if err := (Policy{CubeMergeMinCubes: 1}).Validate(); err == nil {
		t.Fatal("CubeMergeMinCubes 1 accepted")
	}
}
