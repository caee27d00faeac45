package delta

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/internal/testutil"
)

func TestWritableOnTestTables(t *testing.T) {
	// Tables refused beyond expected.json's mustRefuse, with the feature
	// this build does not implement.
	refusedFor := map[string]string{
		"many-table-features":           "minReaderVersion=5",
		"catalog-managed-ict-staged":    "catalogManaged",
		"materialize-partition-columns": "materializePartitionColumns",
		"iceberg-compat-v2":             "icebergCompatV2",
	}
	exp := testutil.ExpectedTables(t)
	for _, name := range slices.Sorted(maps.Keys(exp)) {
		t.Run(name, func(t *testing.T) {
			snap, err := LoadSnapshot(context.Background(), openDir(t, testutil.DeltaTable(t, name)), -1)
			if err != nil {
				t.Fatal(err)
			}
			werr := Writable(snap)
			want, refused := refusedFor[name]
			if exp[name].MustRefuse && !refused {
				t.Fatalf("test table list out of date: %s must be refused", name)
			}
			if !refused {
				if werr != nil {
					t.Fatalf("Writable = %v, want nil", werr)
				}
				return
			}
			var ufe *UnsupportedFeatureError
			if !errors.As(werr, &ufe) {
				t.Fatalf("Writable = %v, want an *UnsupportedFeatureError", werr)
			}
			if !strings.Contains(werr.Error(), want) {
				t.Fatalf("Writable = %v, want it to name %s", werr, want)
			}
		})
	}
}

func TestWritableNamesEachFeature(t *testing.T) {
	tests := []struct {
		name     string
		proto    actions.Protocol
		features []string // names the error must contain; none = writable
		kind     string   // Kind of the first error
	}{
		{"legacy 1/2", actions.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, nil, ""},
		{"legacy 2/6 implies column mapping and identity", actions.Protocol{MinReaderVersion: 2, MinWriterVersion: 6}, nil, ""},
		{"reader version 4", actions.Protocol{MinReaderVersion: 4, MinWriterVersion: 7}, []string{"minReaderVersion=4"}, KindReader},
		{"writer version 8", actions.Protocol{MinReaderVersion: 1, MinWriterVersion: 8}, []string{"minWriterVersion=8"}, KindWriter},
		{"unknown reader feature", actions.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors", "blahabl"}, WriterFeatures: []string{"deletionVectors", "blahabl"}},
			[]string{`"blahabl"`}, KindReader},
		{"iceberg compatibility", actions.Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"columnMapping", "icebergCompatV2"}}, []string{"icebergCompatV2"}, KindWriter},
		{"several", actions.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"variantType"}, WriterFeatures: []string{"variantType", "icebergCompatV1", "coordinatedCommits-preview"}},
			[]string{"variantType", "icebergCompatV1", "coordinatedCommits-preview"}, KindReader},
		{"all implemented", actions.Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
			ReaderFeatures: []string{"columnMapping", "deletionVectors", "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck", "typeWidening"},
			WriterFeatures: SupportedWriterFeatures()}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Writable(&Snapshot{Protocol: tt.proto})
			if len(tt.features) == 0 {
				if err != nil {
					t.Fatalf("Writable = %v", err)
				}
				return
			}
			var ufe *UnsupportedFeatureError
			if !errors.As(err, &ufe) || ufe.Kind != tt.kind {
				t.Fatalf("Writable = %v (first %+v), want kind %s", err, ufe, tt.kind)
			}
			for _, f := range tt.features {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("Writable = %v, does not name %s", err, f)
				}
			}
		})
	}
}

func TestClusteringColumnsShapes(t *testing.T) {
	tests := []struct {
		name string
		snap Snapshot
		want string
	}{
		{"spark paths", Snapshot{Domains: map[string]actions.DomainMetadata{"delta.clustering": {Domain: "delta.clustering", Configuration: `{"clusteringColumns":[["a"],["s","b"]],"domainName":"delta.clustering"}`}}}, "[[a] [s b]]"},
		{"legacy liquid", Snapshot{Domains: map[string]actions.DomainMetadata{"delta.liquid": {Configuration: `{"clusteringColumns":[{"physicalName":["id"]}]}`}}}, "[[id]]"},
		{"flat list", Snapshot{Domains: map[string]actions.DomainMetadata{"delta.clustering": {Configuration: `{"clusteringColumns":["x","y"]}`}}}, "[[x] [y]]"},
		{"property", Snapshot{Metadata: actions.Metadata{Configuration: map[string]string{"clusteringColumns": `[["p"]]`}}}, "[[p]]"},
		{"none", Snapshot{}, "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ClusteringColumns(&tt.snap)
			if err != nil {
				t.Fatal(err)
			}
			if s := fmtPaths(got); s != tt.want {
				t.Fatalf("got %s, want %s", s, tt.want)
			}
		})
	}
	if _, err := ClusteringColumns(&Snapshot{Domains: map[string]actions.DomainMetadata{"delta.clustering": {Configuration: `{"clusteringColumns":[7]}`}}}); err == nil {
		t.Fatal("a number as clustering column was accepted")
	}
	// Real tables: the DBR checkpoint and the legacy liquid table.
	for name, want := range map[string]string{
		"ckpt-only-domain-metadata-clustering-rowtracking": "[[department]]",
		"liquid-legacy-rowtracking":                        "[[id]]",
	} {
		snap, err := LoadSnapshot(context.Background(), openDir(t, testutil.DeltaTable(t, name)), -1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ClusteringColumns(snap)
		if err != nil || fmtPaths(got) != want {
			t.Errorf("%s: clustering columns %s (%v), want %s", name, fmtPaths(got), err, want)
		}
	}
}

func fmtPaths(p [][]string) string {
	parts := make([]string, len(p))
	for i, x := range p {
		parts[i] = "[" + strings.Join(x, " ") + "]"
	}
	return "[" + strings.Join(parts, " ") + "]"
}
