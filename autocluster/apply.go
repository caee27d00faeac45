package autocluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/compactord/compactord/clusteradvise"
	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/failure"
)

// The clustering domain and the features it needs.
const (
	ClusteringDomain      = "delta.clustering"
	featureClustering     = "clustering"
	featureDomainMetadata = "domainMetadata"
	// OperationClusterBy is the commitInfo.operation of a key change, as
	// Spark names ALTER TABLE ... CLUSTER BY.
	OperationClusterBy = "CLUSTER BY"
)

// ErrRefused is wrapped by Apply's error when the table's protocol or
// layout does not allow the key (the error says why); it is a halt of
// auto clustering only, never of the table.
var ErrRefused = errors.New("clustering key refused")

// clusteringConfig is the delta.clustering domain's configuration in the
// shape Databricks writes it: physical-name paths, then the domain's name
// (the DBR checkpoint of the test table
// ckpt-only-domain-metadata-clustering-rowtracking holds
// {"clusteringColumns":[["department"]],"domainName":"delta.clustering"}).
type clusteringConfig struct {
	ClusteringColumns [][]string `json:"clusteringColumns"`
	DomainName        string     `json:"domainName"`
}

// DomainConfiguration renders the delta.clustering configuration of the
// physical paths.
func DomainConfiguration(paths [][]string) (string, error) {
	if paths == nil {
		paths = [][]string{}
	}
	b, err := json.Marshal(clusteringConfig{ClusteringColumns: paths, DomainName: ClusteringDomain})
	return string(b), err
}

// PlanKey checks that key (logical names) may become snap's clustering
// key and returns the actions that set it: a protocol action adding the
// clustering and domainMetadata writer features where the table lacks
// them, and the delta.clustering domain. The protocol must already use
// table features (writer version 7): upgrading a legacy protocol changes
// what every writer of the table must support, and is left to the
// table's owner (ALTER TABLE ... CLUSTER BY in Spark does it). Refused
// too: partitioned tables (a clustered table is never partitioned), DBR's
// preview liquid tables, a column without statistics (clustered files
// must have them) or of a type a key cannot use, more than MaxKeyColumns.
func PlanKey(snap *delta.Snapshot, key []string) ([]actions.Action, error) {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, args...))
	}
	switch {
	case len(key) == 0:
		return nil, refuse("no columns")
	case len(key) > clusteradvise.MaxKeyColumns:
		return nil, refuse("%d columns, over the %d liquid clustering allows", len(key), clusteradvise.MaxKeyColumns)
	case len(snap.Metadata.PartitionColumns) > 0:
		return nil, refuse("the table is partitioned by %s, and a clustered table must not be", strings.Join(snap.Metadata.PartitionColumns, ", "))
	case snap.Protocol.HasFeature("liquid"):
		return nil, refuse("the table uses the preview feature liquid (domain delta.liquid), whose keys compactord does not change")
	case snap.Protocol.MinWriterVersion < 7:
		return nil, refuse("the table's protocol (writer version %d) has no table features; adding clustering would upgrade it for every writer: set the first key with ALTER TABLE ... CLUSTER BY", snap.Protocol.MinWriterVersion)
	}
	if err := delta.Writable(snap); err != nil {
		return nil, refuse("%v", err)
	}
	cols, err := clusteradvise.TableColumns(snap)
	if err != nil {
		return nil, err
	}
	indexed := statsColumns(snap)
	paths := make([][]string, 0, len(key))
	for _, name := range key {
		col, ok := cols[name]
		if !ok {
			return nil, refuse("column %s: not a top-level column of a type a key can use", name)
		}
		if indexed != nil && !indexed[strings.ToLower(name)] {
			return nil, refuse("column %s: no statistics are collected on it (delta.dataSkippingNumIndexedCols / delta.dataSkippingStatsColumns)", name)
		}
		paths = append(paths, col.Path)
	}
	conf, err := DomainConfiguration(paths)
	if err != nil {
		return nil, err
	}
	var out []actions.Action
	wf := snap.Protocol.WriterFeatures
	if !slices.Contains(wf, featureClustering) || !slices.Contains(wf, featureDomainMetadata) {
		p := snap.Protocol
		p.WriterFeatures = append([]string(nil), wf...)
		for _, f := range []string{featureDomainMetadata, featureClustering} {
			if !slices.Contains(p.WriterFeatures, f) {
				p.WriterFeatures = append(p.WriterFeatures, f)
			}
		}
		out = append(out, actions.Action{Protocol: &p})
	}
	out = append(out, actions.Action{DomainMetadata: &actions.DomainMetadata{Domain: ClusteringDomain, Configuration: conf}})
	return out, nil
}

// statsColumns is the set of top-level columns (lower case) with
// statistics, nil when every column has them.
func statsColumns(snap *delta.Snapshot) map[string]bool {
	pr := snap.Properties()
	if pr.StatsColumns != nil {
		out := map[string]bool{}
		for _, p := range pr.StatsColumns {
			if len(p) > 0 {
				out[p[0]] = true
			}
		}
		return out
	}
	if pr.NumIndexedCols < 0 || snap.Schema == nil || pr.NumIndexedCols >= len(snap.Schema.Fields) {
		return nil
	}
	// The first NumIndexedCols leaves: top-level primitive columns count
	// one each; a struct counts its leaves, so only columns before the
	// first struct are known here.
	out := map[string]bool{}
	n := 0
	for _, f := range snap.Schema.Fields {
		if n >= pr.NumIndexedCols || f.Type == nil || f.Type.Struct != nil {
			break
		}
		out[strings.ToLower(f.Name)] = true
		n++
	}
	return out
}

// Apply commits key as the table's clustering key (PlanKey's actions, as
// a CLUSTER BY commit naming the old and new keys) against snap and
// returns the version. A concurrent commit that changes the protocol, the
// metadata or the clustering domain makes it fail (class Retry).
func Apply(ctx context.Context, t *delta.Table, snap *delta.Snapshot, key []string, opts commit.Options) (int64, error) {
	acts, err := PlanKey(snap, key)
	if err != nil {
		return -1, failure.With(failure.Halt, fmt.Errorf("table %s: %w", t.Name(), err))
	}
	old, err := clusteradvise.CurrentKey(snap)
	if err != nil {
		return -1, err
	}
	oldJSON, _ := json.Marshal(nonNil(old))
	newJSON, _ := json.Marshal(key)
	tx := &commit.Txn{
		Table: t, Snapshot: snap,
		Operation:           OperationClusterBy,
		OperationParameters: map[string]any{"oldClusteringColumns": string(oldJSON), "newClusteringColumns": string(newJSON)},
		IsolationLevel:      commit.TableIsolation(snap),
		Domains:             map[string]bool{ClusteringDomain: true},
		Actions:             acts,
		Options:             opts,
	}
	v, err := tx.Commit(ctx)
	if err != nil {
		return -1, fmt.Errorf("table %s: set clustering key %s: %w", t.Name(), keyText(key), err)
	}
	return v, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
