package delta

import (
	"encoding/json"
	"fmt"
)

// Where clustering columns are recorded.
const (
	domainClustering   = "delta.clustering"
	domainLiquid       = "delta.liquid"
	propLiquidClusters = "delta.liquid.clusteringColumns"
	propClusterColumns = "clusteringColumns"
)

// ClusteringColumns returns the table's clustering columns as physical
// name paths, nil when the table is not clustered. It reads, in order: the
// delta.clustering domain, the legacy delta.liquid domain, then the
// delta.liquid.clusteringColumns and clusteringColumns table properties.
// Each accepts the three shapes seen in real tables: a list of paths
// ({"clusteringColumns":[["a","b"]]}, Spark/DBR), a list of
// {"physicalName":[...]} objects (legacy DBR liquid) and a flat list of
// names (PROTOCOL.md's example; a name is a one-element path). A property
// may also hold the bare list.
func ClusteringColumns(s *Snapshot) ([][]string, error) {
	for _, dom := range []string{domainClustering, domainLiquid} {
		d, ok := s.Domains[dom]
		if !ok || d.Removed {
			continue
		}
		cols, err := parseClusteringConfig([]byte(d.Configuration))
		if err != nil {
			return nil, fmt.Errorf("version %d: domain %s: %w", s.Version, dom, err)
		}
		return cols, nil
	}
	for _, prop := range []string{propLiquidClusters, propClusterColumns} {
		v, ok := s.Metadata.Configuration[prop]
		if !ok || v == "" {
			continue
		}
		cols, err := parseClusteringConfig([]byte(v))
		if err != nil {
			return nil, fmt.Errorf("version %d: table property %s: %w", s.Version, prop, err)
		}
		return cols, nil
	}
	return nil, nil
}

// parseClusteringConfig parses {"clusteringColumns": list} or a bare list.
func parseClusteringConfig(b []byte) ([][]string, error) {
	var list []json.RawMessage
	var obj struct {
		ClusteringColumns []json.RawMessage `json:"clusteringColumns"`
	}
	if err := json.Unmarshal(b, &obj); err == nil {
		list = obj.ClusteringColumns
	} else if err2 := json.Unmarshal(b, &list); err2 != nil {
		return nil, fmt.Errorf("want {\"clusteringColumns\":[...]} or a list: %w", err)
	}
	out := make([][]string, 0, len(list))
	for i, raw := range list {
		var path []string
		var name string
		var withName struct {
			PhysicalName []string `json:"physicalName"`
		}
		switch {
		case json.Unmarshal(raw, &path) == nil:
		case json.Unmarshal(raw, &name) == nil:
			path = []string{name}
		case json.Unmarshal(raw, &withName) == nil && len(withName.PhysicalName) > 0:
			path = withName.PhysicalName
		default:
			return nil, fmt.Errorf("clustering column %d: unrecognized shape %s", i, raw)
		}
		if len(path) == 0 {
			return nil, fmt.Errorf("clustering column %d: empty path", i)
		}
		out = append(out, path)
	}
	return out, nil
}
