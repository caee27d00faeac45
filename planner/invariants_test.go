package planner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/props"
	"github.com/compactord/compactord/delta/schema"
	"github.com/compactord/compactord/delta/stats"
)

// randomSnapshot builds a table of random files: partitions (or clustering
// columns), sizes, DVs, ages, Z-cubes and stats.
func randomSnapshot(rng *rand.Rand, clustered bool) *delta.Snapshot {
	snap := &delta.Snapshot{Version: rng.Int64N(1000), Domains: map[string]actions.DomainMetadata{}}
	snap.Schema = &schema.StructType{Fields: []*schema.StructField{
		{Name: "k", Type: &schema.DataType{Name: "long"}},
		{Name: "s", Type: &schema.DataType{Name: "string"}},
	}}
	if clustered {
		snap.Domains["delta.clustering"] = actions.DomainMetadata{Domain: "delta.clustering", Configuration: `{"clusteringColumns":[["k"],["s"]]}`}
	} else {
		snap.Metadata.PartitionColumns = []string{"p"}
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cubes := []string{"c1", "c2", "c3", "c4"}
	n := rng.IntN(60)
	for i := 0; i < n; i++ {
		recs := int64(1 + rng.IntN(1000))
		lo := rng.Int64N(10000)
		a := &actions.Add{
			Path:             fmt.Sprintf("f%03d-%d.parquet", i, rng.IntN(100)),
			Size:             1 + rng.Int64N(400),
			ModificationTime: now.Add(-time.Duration(rng.IntN(120)) * time.Minute).UnixMilli(),
			PartitionValues:  map[string]*string{},
		}
		if !clustered {
			v := fmt.Sprint(rng.IntN(3))
			if rng.IntN(5) == 0 {
				a.PartitionValues["p"] = nil
			} else {
				a.PartitionValues["p"] = &v
			}
		}
		if rng.IntN(6) != 0 {
			a.ParsedStats = &stats.Stats{NumRecords: &recs,
				MinValues: map[string]any{"k": json.Number(fmt.Sprint(lo)), "s": fmt.Sprintf("s%04d", rng.IntN(5000))},
				MaxValues: map[string]any{"k": json.Number(fmt.Sprint(lo + rng.Int64N(3000))), "s": fmt.Sprintf("s%04d", 5000+rng.IntN(5000))}}
		}
		if rng.IntN(5) == 0 {
			a.DeletionVector = &actions.DeletionVector{StorageType: "u", PathOrInlineDv: "x" + a.Path, Cardinality: 1 + rng.Int64N(recs)}
		}
		if clustered && rng.IntN(2) == 0 {
			liquid := ClusteringProviderLiquid
			a.ClusteringProvider = &liquid
			by := `["k","s"]`
			if rng.IntN(8) == 0 {
				by = `["k"]`
			}
			a.Tags = map[string]string{TagZCubeID: cubes[rng.IntN(len(cubes))], TagZCubeZOrderBy: by}
		}
		snap.Files = append(snap.Files, a)
	}
	return snap
}

func randomPolicy(rng *rand.Rand, clustered bool) Policy {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := Policy{
		TargetFileSize:       100 + rng.Int64N(400),
		MinFileSize:          50 + rng.Int64N(300),
		MaxDeletedRowsRatio:  []float64{0, 0.01, 0.3, 1}[rng.IntN(4)],
		SettleWindow:         time.Duration(rng.IntN(3)) * 30 * time.Minute,
		MaxBytesPerRun:       []int64{0, 300, 2000}[rng.IntN(3)],
		MaxJobsPerRun:        rng.IntN(4),
		JobOrder:             []JobOrder{"", JobOrderBytesAsc, JobOrderBytesDesc, JobOrderFilesAsc, JobOrderFilesDesc, JobOrderOldestFirst}[rng.IntN(6)],
		MaxUnclusteredBytes:  1 + rng.Int64N(3000),
		MaxRelativeFileRange: []float64{0, 0.05, 1}[rng.IntN(3)],
		MinCubeSize:          100 + rng.Int64N(1500),
		CubeMergeMinCubes:    []int{0, -1, 2, 3, 4}[rng.IntN(5)],
		Now:                  now,
	}
	strategies := []Strategy{StrategyAuto, StrategyBinpack}
	if clustered {
		strategies = append(strategies, StrategyLightweight, StrategyZCube)
		p.Full = rng.IntN(6) == 0
	}
	p.Strategy = strategies[rng.IntN(len(strategies))]
	if p.Full && p.Strategy != StrategyAuto {
		p.Strategy = StrategyZCube
	}
	return p
}

// TestPlanInvariantsHoldOnRandomTables checks, on random tables and
// policies, what every plan must satisfy whatever the strategy.
func TestPlanInvariantsHoldOnRandomTables(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 7))
	jobsBy := map[Strategy]int{}
	for iter := 0; iter < 400; iter++ {
		clustered := iter%2 == 0
		snap := randomSnapshot(rng, clustered)
		pol := randomPolicy(rng, clustered)
		name := fmt.Sprintf("iter%d", iter)
		pl, err := Plan(snap, pol)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// Deterministic, and independent of the order of snap.Files.
		a, _ := json.Marshal(pl)
		shuffled := *snap
		shuffled.Files = append([]*actions.Add(nil), snap.Files...)
		rng.Shuffle(len(shuffled.Files), func(i, j int) { shuffled.Files[i], shuffled.Files[j] = shuffled.Files[j], shuffled.Files[i] })
		pl2, err := Plan(&shuffled, pol)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(pl2)
		if !bytes.Equal(a, b) {
			t.Fatalf("%s: plan depends on file order", name)
		}
		s, _ := resolve(pol, nil)
		cutoff := pol.Now.Add(-pol.SettleWindow).UnixMilli()
		seen := map[string]bool{}
		ids := map[string]bool{}
		accounted := 0
		var bytesTotal int64
		for _, j := range pl.Jobs {
			jobsBy[j.Strategy]++
			if ids[j.ID] {
				t.Fatalf("%s: duplicate job id %s", name, j.ID)
			}
			ids[j.ID] = true
			if j.Strategy != pl.Strategy {
				t.Fatalf("%s: job %s has strategy %s in a %s plan", name, j.ID, j.Strategy, pl.Strategy)
			}
			bytesTotal += j.SourceBytes
			pk := partitionKey(snap.Metadata.PartitionColumns, j.PartitionValues)
			var sum int64
			for _, src := range j.Sources {
				if seen[src.Path] {
					t.Fatalf("%s: %s in two jobs", name, src.Path)
				}
				seen[src.Path] = true
				accounted++
				sum += src.Size
				if partitionKey(snap.Metadata.PartitionColumns, src.PartitionValues) != pk {
					t.Fatalf("%s: job %s mixes partitions", name, j.ID)
				}
				clusteredFile := src.ClusteringProvider != nil || src.Tags[TagZCubeID] != ""
				if pol.SettleWindow > 0 && src.ModificationTime > cutoff && !clusteredFile {
					t.Fatalf("%s: job %s rewrites settling file %s", name, j.ID, src.Path)
				}
				if j.Strategy == StrategyLightweight && clusteredFile {
					t.Fatalf("%s: lightweight job %s touches clustered %s", name, j.ID, src.Path)
				}
			}
			if sum != j.SourceBytes {
				t.Fatalf("%s: job %s sourceBytes %d, sources sum %d", name, j.ID, j.SourceBytes, sum)
			}
			switch j.Strategy {
			case StrategyZCube:
				if j.Sort == nil || j.ClusteringProvider != ClusteringProviderLiquid || j.Tags[TagZCubeID] == "" || j.Tags[TagZCubeZOrderBy] != `["k","s"]` {
					t.Fatalf("%s: zcube job %s lacks sort or tags: %+v", name, j.ID, j)
				}
			default:
				if j.Sort != nil || len(j.Tags) != 0 || j.ClusteringProvider != "" {
					t.Fatalf("%s: %s job %s sorts or tags", name, j.Strategy, j.ID)
				}
				if len(j.Sources) > 1 && j.SourceBytes > s.target {
					t.Fatalf("%s: job %s of %d bytes over target %d", name, j.ID, j.SourceBytes, s.target)
				}
				if len(j.Sources) == 1 {
					src := j.Sources[0]
					recs := int64(-1)
					if n, ok, err := src.NumRecords(); err == nil && ok {
						recs = n
					}
					if src.NumDeleted() == 0 || (recs > 0 && float64(src.NumDeleted())/float64(recs) <= s.maxDeletedRatio) {
						t.Fatalf("%s: single-file job %s is not a DV purge", name, j.ID)
					}
				}
			}
		}
		if pol.MaxJobsPerRun > 0 && len(pl.Jobs) > pol.MaxJobsPerRun {
			t.Fatalf("%s: %d jobs over cap %d", name, len(pl.Jobs), pol.MaxJobsPerRun)
		}
		if pol.MaxBytesPerRun > 0 && bytesTotal > pol.MaxBytesPerRun {
			t.Fatalf("%s: %d bytes over cap %d", name, bytesTotal, pol.MaxBytesPerRun)
		}
		for _, sk := range pl.Skipped {
			accounted += sk.Files
		}
		if accounted != len(snap.Files) {
			t.Fatalf("%s: %d files in jobs and skips, table has %d", name, accounted, len(snap.Files))
		}
	}
	for _, st := range []Strategy{StrategyBinpack, StrategyLightweight, StrategyZCube} {
		if jobsBy[st] < 20 {
			t.Errorf("only %d %s jobs generated: the random tables do not exercise it", jobsBy[st], st)
		}
	}
	t.Logf("jobs per strategy: %v", jobsBy)
}

func TestValidateRejectsBadPolicies(t *testing.T) {
	now := time.Unix(1e9, 0)
	for _, tc := range []struct {
		name string
		p    Policy
	}{
		{"unknown strategy", Policy{Strategy: "sort"}},
		{"unknown job order", Policy{JobOrder: "random"}},
		{"negative target", Policy{TargetFileSize: -1}},
		{"negative cap", Policy{MaxJobsPerRun: -1}},
		{"ratio above one", Policy{MaxDeletedRowsRatio: 1.5}},
		{"range below zero", Policy{MaxRelativeFileRange: -0.1}},
		{"settle window without clock", Policy{SettleWindow: time.Minute}},
		{"full binpack", Policy{Strategy: StrategyBinpack, Full: true}},
		{"five clustering columns", Policy{ClusteringColumns: [][]string{{"a"}, {"b"}, {"c"}, {"d"}, {"e"}}}},
		{"duplicate clustering column", Policy{ClusteringColumns: [][]string{{"a"}, {"a"}}}},
		{"empty path element", Policy{LightweightColumn: []string{"a", ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			if err == nil {
				t.Fatal("accepted")
			}
			if _, perr := Plan(&delta.Snapshot{}, tc.p); perr == nil {
				t.Fatal("Plan accepted an invalid policy")
			}
		})
	}
	ok := DefaultPolicy()
	ok.Now = now
	if err := ok.Validate(); err != nil {
		t.Fatalf("default policy: %v", err)
	}
	if err := (Policy{}).Validate(); err != nil {
		t.Fatalf("zero policy: %v", err)
	}
}

func TestTargetFileSizeComesFromTablePropertyUnlessPolicySetsIt(t *testing.T) {
	for _, tc := range []struct {
		prop   string
		policy int64
		want   int64
		bad    bool
	}{
		{"", 0, DefaultTargetFileSize, false},
		{"268435456", 0, 256 << 20, false},
		{"64mb", 0, 64 << 20, false},
		{"1g", 0, 1 << 30, false},
		{"268435456", 1000, 1000, false},
		{"lots", 0, 0, true},
	} {
		conf := map[string]string{}
		if tc.prop != "" {
			conf[props.PropTargetFileSize] = tc.prop
		}
		pl, err := Plan(&delta.Snapshot{Metadata: actions.Metadata{Configuration: conf}}, Policy{TargetFileSize: tc.policy})
		if tc.bad {
			if err == nil {
				t.Errorf("property %q accepted", tc.prop)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if pl.TargetFileSize != tc.want {
			t.Errorf("property %q policy %d: target %d, want %d", tc.prop, tc.policy, pl.TargetFileSize, tc.want)
		}
	}
}

func TestMalformedClusteringMetadataIsAnErrorNamingTheVersion(t *testing.T) {
	snap := &delta.Snapshot{Version: 12, Domains: map[string]actions.DomainMetadata{
		"delta.clustering": {Domain: "delta.clustering", Configuration: `{"clusteringColumns":`},
	}}
	_, err := Plan(snap, Policy{})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("version 12")) {
		t.Fatalf("err = %v", err)
	}
}
