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
		target       int64
		want         []int
	}{
		// 10 of 100 equal files hold the new ts slice: share 0.1, 100
		// buckets; every file spans the whole key range: 1000. The job's
		// 10000 bytes are 200 outputs at a target of 50: slices along ts
		// 0.1 x sqrt(200 / 0.1) = 4.5, so ts is cut.
		{"incremental job over the newest slice", false, false, 50, []int{100, 1000}},
		// 100 outputs give ts 3.2 slices and 1 output 0.3: fewer than
		// minColumnSlices, so ts is left uncut and the outputs are cut by
		// key alone.
		{"too few slices along ts leave it uncut", false, false, 100, []int{1, 1000}},
		{"one output leaves ts uncut", false, false, 1 << 20, []int{1, 1000}},
		{"a source without stats keeps every bucket", true, false, 50, []int{1000, 1000}},
		// ts without stats: the job covers both columns wholly, and its
		// 11 outputs are cut along both (3.3 slices each).
		{"a job over whole ranges is cut along every column", true, false, 1000, []int{1000, 1000}},
		{"full re-clustering covers everything", false, true, 50, []int{1000, 1000}},
		{"full re-clustering cuts every column, however few outputs", false, true, 1 << 20, []int{1000, 1000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Policy{Strategy: StrategyZCube, TargetFileSize: tc.target, MinFileSize: 1 << 20, MinCubeSize: 100_000, Full: tc.full}
			pl, err := Plan(streamSnapshot(tc.withoutStats), p)
			if err != nil {
				t.Fatal(err)
			}
			if tc.full {
				// FULL bins every file: the first job is enough here.
				if len(pl.Jobs) == 0 || pl.Jobs[0].Sort == nil {
					t.Fatalf("want sorted jobs, got %d jobs", len(pl.Jobs))
				}
			} else if len(pl.Jobs) != 1 || pl.Jobs[0].Sort == nil {
				t.Fatalf("want one sorted job, got %d jobs", len(pl.Jobs))
			}
			if got := pl.Jobs[0].Sort.Buckets; fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("buckets %v, want %v", got, tc.want)
			}
		})
	}
}

func TestUncutColumns(t *testing.T) {
	for _, tc := range []struct {
		name    string
		shares  []float64
		spread  []float64
		outputs int64
		want    []bool
	}{
		{"one column is always cut", []float64{0.01}, []float64{1}, 1, []bool{false}},
		{"whole ranges are cut however few the outputs", []float64{1, 1}, []float64{1, 1}, 2, []bool{false, false}},
		// Shares of 0.5: sqrt(outputs) slices each.
		{"half shares, 16 outputs: 4 slices each", []float64{0.5, 0.5}, []float64{1, 1}, 16, []bool{false, false}},
		{"half shares, 15 outputs: the first is left uncut", []float64{0.5, 0.5}, []float64{1, 1}, 15, []bool{true, false}},
		{"equal shares: the column the files are narrow along goes first", []float64{0.5, 0.5}, []float64{1, 0.1}, 15, []bool{false, true}},
		{"the narrow column goes first", []float64{1, 0.05}, []float64{0.01, 1}, 100, []bool{false, true}},
		// 0.2 x (500 / 0.1)^(1/3) = 3.4 slices: the narrow column is
		// uncut, then 0.5 x sqrt(500 / 0.5) = 16 stays cut; at 1000
		// outputs 0.2 x (1000 / 0.1)^(1/3) = 4.3 cuts all three.
		{"the rest share the slices again", []float64{1, 0.5, 0.2}, []float64{1, 1, 1}, 500, []bool{false, false, true}},
		{"enough outputs cut all three", []float64{1, 0.5, 0.2}, []float64{1, 1, 1}, 1000, []bool{false, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := uncutColumns(tc.shares, tc.spread, tc.outputs); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("uncut %v, want %v", got, tc.want)
			}
		})
	}
}
