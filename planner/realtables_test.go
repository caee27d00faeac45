package planner

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

func loadRealTable(t *testing.T, name string) *delta.Snapshot {
	t.Helper()
	return tabletest.Latest(t, tabletest.Open(t, "file://"+testutil.DeltaTable(t, name)))
}

// TestPlansOfRealTables plans tables written by Spark, Databricks and
// delta-rs, checks what each plan must say about that table, and compares
// the whole plan with testdata/real.<table>.<case>.golden.json.
func TestPlansOfRealTables(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) // every file is settled
	for _, tc := range []struct {
		table, name string
		policy      Policy
		check       func(t *testing.T, snap *delta.Snapshot, pl *CompactionPlan)
	}{
		{
			table: "small-files-merge-update-delete", name: "auto",
			policy: Policy{Now: now, SettleWindow: time.Hour},
			check: func(t *testing.T, snap *delta.Snapshot, pl *CompactionPlan) {
				if pl.Strategy != StrategyBinpack || len(pl.ClusteringColumns) != 0 {
					t.Fatalf("strategy %s columns %v, want binpack on an unclustered table", pl.Strategy, pl.ClusteringColumns)
				}
				// Every file is far below 1 GiB: all live files are merged
				// (bins of one file only as DV purges).
				n := 0
				for _, j := range pl.Jobs {
					n += len(j.Sources)
				}
				if n < len(snap.Files)-1 {
					t.Fatalf("%d of %d small files planned", n, len(snap.Files))
				}
			},
		},
		{
			table: "dv-large-multi-dv-per-file", name: "purgeEveryDV",
			policy: Policy{Now: now, MaxDeletedRowsRatio: 1e-9, MinFileSize: 1},
			check: func(t *testing.T, snap *delta.Snapshot, pl *CompactionPlan) {
				dvs := 0
				for _, a := range snap.Files {
					if a.DeletionVector != nil {
						dvs++
					}
				}
				if dvs == 0 {
					t.Fatal("fixture has no DVs")
				}
				purged := 0
				for _, j := range pl.Jobs {
					for _, s := range j.Sources {
						if s.DeletionVector == nil {
							t.Fatalf("job %s rewrites %s which has no DV", j.ID, s.Path)
						}
						purged++
					}
				}
				if purged != dvs {
					t.Fatalf("%d of %d DV files purged", purged, dvs)
				}
			},
		},
		{
			table: "liquid-legacy-rowtracking", name: "auto",
			policy: Policy{Now: now},
			check: func(t *testing.T, snap *delta.Snapshot, pl *CompactionPlan) {
				if len(pl.ClusteringColumns) != 1 || pl.ClusteringColumns[0] != "id" || pl.ClusteringSource != "table" {
					t.Fatalf("clustering columns %v from %q, want [id] from the delta.liquid domain", pl.ClusteringColumns, pl.ClusteringSource)
				}
				if pl.Strategy != StrategyLightweight {
					t.Fatalf("strategy %s, want lightweight (a few unclustered bytes)", pl.Strategy)
				}
			},
		},
		{
			table: "liquid-legacy-rowtracking", name: "full",
			policy: Policy{Now: now, Full: true},
			check: func(t *testing.T, snap *delta.Snapshot, pl *CompactionPlan) {
				if pl.Strategy != StrategyZCube || len(pl.Jobs) != 1 || len(pl.Jobs[0].Sources) != len(snap.Files) {
					t.Fatalf("full plan: %s with %d jobs, want one zcube job over all %d files", pl.Strategy, len(pl.Jobs), len(snap.Files))
				}
				j := pl.Jobs[0]
				if j.Sort == nil || j.Sort.Curve != CurveZOrder || j.Tags[TagZCubeZOrderBy] != `["id"]` || j.ClusteringProvider != "liquid" {
					t.Fatalf("job sort %+v tags %v provider %q", j.Sort, j.Tags, j.ClusteringProvider)
				}
				if pl.OperationParameters["clusterBy"] != `["id"]` || pl.OperationParameters["isFull"] != true {
					t.Fatalf("operation parameters %v", pl.OperationParameters)
				}
			},
		},
		{
			table: "ckpt-only-domain-metadata-clustering-rowtracking", name: "auto",
			policy: Policy{Now: now},
			check: func(t *testing.T, snap *delta.Snapshot, pl *CompactionPlan) {
				if len(pl.ClusteringColumns) != 1 || pl.ClusteringColumns[0] != "department" {
					t.Fatalf("clustering columns %v, want [department] from the delta.clustering domain", pl.ClusteringColumns)
				}
				if pl.Considered.Files != len(snap.Files) || len(snap.Files) != 109 {
					t.Fatalf("considered %d files, snapshot has %d (want 109)", pl.Considered.Files, len(snap.Files))
				}
			},
		},
		{
			table: "ckpt-only-domain-metadata-clustering-rowtracking", name: "lightweight",
			policy: Policy{Now: now, Strategy: StrategyLightweight},
			check: func(t *testing.T, snap *delta.Snapshot, pl *CompactionPlan) {
				if pl.Lightweight == nil || len(pl.Lightweight.Ranges) != 1 {
					t.Fatalf("lightweight record %+v", pl.Lightweight)
				}
				for _, j := range pl.Jobs {
					if j.Sort != nil || len(j.Tags) != 0 {
						t.Fatalf("lightweight job %s sorts or tags", j.ID)
					}
				}
				if pl.OperationParameters["clusterBy"] != "[]" {
					t.Fatalf("clusterBy %v, want []", pl.OperationParameters["clusterBy"])
				}
			},
		},
		{
			table: "dv-partitioned-with-checkpoint", name: "binpackPerPartition",
			policy: Policy{Now: now},
			check: func(t *testing.T, snap *delta.Snapshot, pl *CompactionPlan) {
				for _, j := range pl.Jobs {
					k := partitionKey(snap.Metadata.PartitionColumns, j.PartitionValues)
					for _, s := range j.Sources {
						if partitionKey(snap.Metadata.PartitionColumns, s.PartitionValues) != k {
							t.Fatalf("job %s mixes partitions", j.ID)
						}
					}
				}
				if len(pl.Jobs) == 0 {
					t.Fatal("no jobs on a table of 15 small files")
				}
			},
		},
	} {
		t.Run(tc.table+"/"+tc.name, func(t *testing.T) {
			snap := loadRealTable(t, tc.table)
			pl, err := Plan(snap, tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, snap, pl)
			got, err := json.MarshalIndent(pl, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			checkGolden(t, filepath.Join("testdata", "real."+tc.table+"."+tc.name+".golden.json"), got)
		})
	}
}

// TestPlansNeverMixPartitionsOnFixtures plans every readable fixture table
// with binpack and every file a candidate, and checks that each job's
// sources share one partition: partition values are keyed by physical name
// under column mapping, and grouping them by logical name once put every
// file of cm-name-partitioned-all-types in a single "null" partition.
func TestPlansNeverMixPartitionsOnFixtures(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(testutil.DeltaTestdata(t), "*", "delta"))
	if err != nil {
		t.Fatal(err)
	}
	partitioned, mapped := 0, 0
	for _, dir := range dirs {
		name := filepath.Base(filepath.Dir(dir))
		ctx := context.Background()
		tbl, err := delta.OpenTable(ctx, "file://"+dir)
		if err != nil {
			t.Fatal(err)
		}
		snap, err := delta.LoadSnapshot(ctx, tbl, -1)
		_ = tbl.Close()
		if err != nil || len(snap.Metadata.PartitionColumns) == 0 {
			continue // unreadable fixtures are refused elsewhere
		}
		partitioned++
		if m := snap.Metadata.Configuration["delta.columnMapping.mode"]; m == "name" || m == "id" {
			mapped++
		}
		pl, err := Plan(snap, Policy{Strategy: StrategyBinpack, MinFileSize: 1 << 40, TargetFileSize: 1 << 40})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, j := range pl.Jobs {
			want, _ := json.Marshal(j.PartitionValues)
			for _, s := range j.Sources {
				if got, _ := json.Marshal(s.PartitionValues); !bytes.Equal(got, want) {
					t.Errorf("%s: job %s mixes partition %s with %s (%s)", name, j.ID, want, got, s.Path)
				}
			}
		}
	}
	if partitioned < 5 || mapped < 2 {
		t.Fatalf("only %d partitioned fixtures (%d with column mapping) planned", partitioned, mapped)
	}
}
