package planner

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/schema"
	"github.com/compactord/compactord/delta/stats"
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

// jobSources lists, per job, its sources' names (no .parquet), sorted and
// space-separated; the jobs sorted.
func jobSources(pl *CompactionPlan) []string {
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
	return got
}

func TestPartialCubesMergeOnlyAboveTheBound(t *testing.T) {
	many := []int64{500, 100, 100, 100, 100, 500, 90, 90, 90}
	for _, tc := range []struct {
		name  string
		cubes []int64
		uncl  int64
		min   int
		want  []string // per job: its sources' names, sorted, space-separated
	}{
		// 3 cubes + the new one in a partition of 4 files: at most
		// 2 x sqrt(4) = 4 cubes, so nothing merges.
		{"new data alone at the bound", []int64{100, 110, 120}, 90, 4, []string{"new"}},
		// 9 + 1 cubes in 10 files: over 2 x sqrt(10) = 6.3; the 4
		// adjacent cubes (no stats: in id order) of least size merge.
		{"over the bound the least adjacent run merges", many, 90, 4, []string{"new", "cube-01 cube-02 cube-03 cube-04"}},
		{"a merge takes cube merge min cubes", many, 90, 3, []string{"new", "cube-06 cube-07 cube-08"}},
		// The run 0-3 is least in total (330) but would rewrite the
		// cube of 300; the run 4-7 has the smallest largest cube.
		{"a merge leaves a large cube out", []int64{10, 10, 10, 300, 100, 100, 100, 100}, 90, 4, []string{"new", "cube-04 cube-05 cube-06 cube-07"}},
		{"no new data: the quiet partition merges every partial cube", []int64{300, 310, 10}, 0, 4, []string{"cube-00 cube-01 cube-02"}},
		{"delta's behaviour merges everything", []int64{100, 5000}, 90, -1, []string{"cube-00 cube-01 new"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Policy{Strategy: StrategyZCube, TargetFileSize: 1 << 20, MinFileSize: 1 << 20, MinCubeSize: 1 << 40, CubeMergeMinCubes: tc.min}
			pl, err := Plan(tieredSnapshot(tc.cubes, tc.uncl), p)
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if got := jobSources(pl); !slices.Equal(got, want) {
				t.Errorf("jobs %q, want %q", got, want)
			}
		})
	}
}

// A table clustered by (v, k): ten one-file cubes, each over the whole
// range of v and a slice of k (cube i at slice 3i mod 10, so id order is
// not k order), plus one new file. The merge must take cubes adjacent
// along k, the column along which the cubes are narrow.
func TestMergedCubesAreAdjacentAlongTheirNarrowestColumn(t *testing.T) {
	snap := &delta.Snapshot{Version: 3, Domains: map[string]actions.DomainMetadata{
		"delta.clustering": {Domain: "delta.clustering", Configuration: `{"clusteringColumns":[["v"],["k"]]}`},
	}}
	snap.Schema = &schema.StructType{Fields: []*schema.StructField{
		{Name: "v", Type: &schema.DataType{Name: "long"}},
		{Name: "k", Type: &schema.DataType{Name: "long"}},
	}}
	file := func(path string, size, lo int64) *actions.Add {
		n := int64(10)
		return &actions.Add{Path: path, Size: size, ParsedStats: &stats.Stats{NumRecords: &n,
			MinValues: map[string]any{"v": json.Number("0"), "k": json.Number(fmt.Sprint(lo))},
			MaxValues: map[string]any{"v": json.Number("1000"), "k": json.Number(fmt.Sprint(lo + 9))}}}
	}
	// Sizes by slice of k: the least run of 4 adjacent slices is 6-9
	// (550); the 4 least cubes (slices 0, 2, 4, 6) are not adjacent.
	bySlice := []int64{100, 400, 100, 400, 100, 400, 100, 150, 150, 150}
	liquid := ClusteringProviderLiquid
	for i := int64(0); i < 10; i++ {
		slice := 3 * i % 10
		a := file(fmt.Sprintf("cube-%02d.parquet", i), bySlice[slice], slice*10)
		a.ClusteringProvider = &liquid
		a.Tags = map[string]string{TagZCubeID: fmt.Sprintf("c%02d", i), TagZCubeZOrderBy: `["v","k"]`}
		snap.Files = append(snap.Files, a)
	}
	snap.Files = append(snap.Files, file("new.parquet", 90, 100))
	p := Policy{Strategy: StrategyZCube, TargetFileSize: 1 << 20, MinFileSize: 1 << 20, MinCubeSize: 1 << 40}
	pl, err := Plan(snap, p)
	if err != nil {
		t.Fatal(err)
	}
	// Slices 6, 7, 8, 9 are cubes 2, 9, 6, 3.
	want := []string{"cube-02 cube-03 cube-06 cube-09", "new"}
	if got := jobSources(pl); !slices.Equal(got, want) {
		t.Errorf("jobs %q, want %q", got, want)
	}
}

func TestCubeMergeMinCubesOfOneIsInvalid(t *testing.T) {
	if err := (Policy{CubeMergeMinCubes: 1}).Validate(); err == nil {
		t.Fatal("CubeMergeMinCubes 1 accepted")
	}
}
