package planner

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/schema"
	"github.com/compactord/compactord/delta/stats"
)

// bigClusteredSnapshot is a clustered table of n files: a third in large
// Z-cubes, the rest small unclustered files with (ts, key) stats.
func bigClusteredSnapshot(n int) *delta.Snapshot {
	rng := rand.New(rand.NewPCG(1, 1))
	snap := &delta.Snapshot{Version: 1, Domains: map[string]actions.DomainMetadata{
		"delta.clustering": {Domain: "delta.clustering", Configuration: `{"clusteringColumns":[["ts"],["key"]]}`},
	}}
	snap.Schema = &schema.StructType{Fields: []*schema.StructField{
		{Name: "ts", Type: &schema.DataType{Name: "timestamp"}},
		{Name: "key", Type: &schema.DataType{Name: "long"}},
	}}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	liquid := ClusteringProviderLiquid
	for i := 0; i < n; i++ {
		recs := int64(1000)
		t0 := base.Add(time.Duration(i) * time.Minute)
		lo := rng.Int64N(1 << 40)
		a := &actions.Add{
			Path: fmt.Sprintf("part-%07d.parquet", i), Size: 1 << 20, ModificationTime: t0.UnixMilli(),
			ParsedStats: &stats.Stats{NumRecords: &recs,
				MinValues: map[string]any{"ts": t0.Format("2006-01-02T15:04:05.000Z07:00"), "key": json.Number(fmt.Sprint(lo))},
				MaxValues: map[string]any{"ts": t0.Add(time.Minute).Format("2006-01-02T15:04:05.000Z07:00"), "key": json.Number(fmt.Sprint(lo + rng.Int64N(1<<40)))}},
		}
		if i%3 == 0 {
			a.Size = 1 << 30
			a.ClusteringProvider = &liquid
			a.Tags = map[string]string{TagZCubeID: fmt.Sprintf("cube-%d", i%50), TagZCubeZOrderBy: `["ts","key"]`}
		}
		snap.Files = append(snap.Files, a)
	}
	return snap
}

// BenchmarkPlan plans a 100k-file clustered table with each strategy.
func BenchmarkPlan(b *testing.B) {
	snap := bigClusteredSnapshot(100_000)
	for _, st := range []Strategy{StrategyBinpack, StrategyLightweight, StrategyZCube, "zcube-full"} {
		b.Run(string(st), func(b *testing.B) {
			p := DefaultPolicy()
			p.Strategy, p.Now = st, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
			if st == "zcube-full" {
				// ~220 jobs of 150 GiB: every job sizes its buckets
				// against all 100k files.
				p.Strategy, p.Full = StrategyZCube, true
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Plan(snap, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
