package checkpointwrite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/internal/deltatest"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/logtest"
	"github.com/parquet-go/parquet-go"
)

// describeColumn renders a parquet node the way the schema test compares
// it: for each node its name, repetition and logical type (converted type
// when a writer set only that), for leaves also the physical type; children
// in file order.
func describeColumn(b *strings.Builder, n parquet.Node, name string, depth int) {
	fmt.Fprintf(b, "%s%s %s", strings.Repeat("  ", depth), deltatest.RepetitionOf(n), name)
	logical := ""
	if lt := n.Type().LogicalType(); lt != nil {
		logical = lt.String()
	} else if ct := n.Type().ConvertedType(); ct != nil {
		logical = fmt.Sprintf("converted %d", *ct)
	}
	if n.Leaf() {
		fmt.Fprintf(b, " %v", n.Type().Kind())
	}
	if logical != "" {
		fmt.Fprintf(b, " (%s)", logical)
	}
	b.WriteByte('\n')
	for _, f := range n.Fields() {
		describeColumn(b, f, f.Name(), depth+1)
	}
}

// columnAt finds the node at a dotted path below the schema root.
func columnAt(root parquet.Node, path string) (parquet.Node, bool) {
	n := root
	for _, part := range strings.Split(path, ".") {
		var next parquet.Node
		for _, f := range n.Fields() {
			if f.Name() == part {
				next = f
			}
		}
		if next == nil {
			return nil, false
		}
		n = next
	}
	return n, true
}

func fileSchema(t *testing.T, path string) *parquet.Schema {
	t.Helper()
	return testutil.OpenParquet(t, path).Schema()
}

// TestCheckpointSchemaMatchesSpark compares, column by column, the schema
// compactord writes for a table with the schema Spark / Databricks wrote
// for the same table's checkpoint in testdata. Older writers laid out some
// actions differently (Delta 1.2's add, Delta 3.0's V2 remove); for those
// tables only the columns whose layout has not changed since are compared.
func TestCheckpointSchemaMatchesSpark(t *testing.T) {
	all := []string{"txn", "add", "remove", "metaData", "protocol", "domainMetadata"}
	tests := []struct {
		table   string
		file    string // under _delta_log/
		layout  cpLayout
		columns []string
	}{
		// Databricks: row tracking, clustering, DVs, stats + stats_parsed.
		{"ckpt-only-domain-metadata-clustering-rowtracking", "00000000000000000108.checkpoint.parquet", layoutClassic, all},
		// Databricks (parquet-mr 1.16): partitioned, writeStatsAsJson=false.
		{"ckpt-v1-multipart-partitioned-struct-stats", "00000000000000000005.checkpoint.0000000001.0000000003.parquet", layoutClassic,
			[]string{"txn", "add", "remove", "metaData", "protocol"}},
		// Delta 1.2.1: typed stats of every primitive type, nested structs.
		{"stats-struct-only-delta121", "00000000000000000010.checkpoint.parquet", layoutClassic,
			[]string{"add.stats_parsed", "txn", "metaData"}},
		// Spark OSS: partitionValues_parsed, by physical name under column mapping.
		{"dv-partitioned-with-checkpoint", "00000000000000000010.checkpoint.parquet", layoutClassic,
			[]string{"add.partitionValues_parsed", "add.deletionVector", "remove.deletionVector", "protocol", "metaData", "txn"}},
		{"dv-with-columnmapping", "00000000000000000010.checkpoint.parquet", layoutClassic,
			[]string{"add.partitionValues_parsed", "protocol", "metaData"}},
		// Spark V2 parquet checkpoint: checkpointMetadata and sidecar.
		{"ckpt-v2-uuid-parquet-golden", "00000000000000000002.checkpoint.e8fa2696-9728-4e9c-b285-634743fdd4fb.parquet", layoutV2Top,
			[]string{"checkpointMetadata", "sidecar", "metaData", "protocol", "txn", "domainMetadata"}},
	}
	for _, tc := range tests {
		t.Run(tc.table, func(t *testing.T) {
			root := testutil.DeltaTable(t, tc.table)
			spark := fileSchema(t, filepath.Join(root, "_delta_log", tc.file))
			v, err := parseVersionPrefix(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			snap, err := delta.LoadSnapshot(context.Background(), logtest.Open(t, root), v)
			if err != nil {
				t.Fatal(err)
			}
			props, err := checkpointProperties(snap)
			if err != nil {
				t.Fatal(err)
			}
			cols, err := checkpointColumns(snap, props)
			if err != nil {
				t.Fatal(err)
			}
			ours := newCPSchema(tc.layout, cols).schema
			for _, col := range tc.columns {
				want, ok := columnAt(spark, col)
				if !ok {
					t.Fatalf("Spark's checkpoint has no column %s", col)
				}
				got, ok := columnAt(ours, col)
				if !ok {
					t.Errorf("our checkpoint has no column %s", col)
					continue
				}
				var gb, wb strings.Builder
				describeColumn(&gb, got, col, 0)
				describeColumn(&wb, want, col, 0)
				if gb.String() != wb.String() {
					t.Errorf("column %s differs\n--- ours\n%s--- Spark\n%s", col, gb.String(), wb.String())
				}
			}
			if tc.layout == layoutClassic && len(tc.columns) == len(all) {
				var got, want []string
				for _, f := range ours.Fields() {
					got = append(got, f.Name())
				}
				for _, f := range spark.Fields() {
					want = append(want, f.Name())
				}
				if strings.Join(got, ",") != strings.Join(want, ",") {
					t.Errorf("top-level columns %v, Spark %v", got, want)
				}
			}
		})
	}
}

func parseVersionPrefix(name string) (int64, error) {
	f, ok := logpath.Parse(name)
	if !ok {
		return 0, fmt.Errorf("%s is not a log file name", name)
	}
	return f.Version, nil
}
