package planner

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/compactord/compactord/delta"
	deltaschema "github.com/compactord/compactord/delta/schema"
)

// column is one clustering column: its logical path (as users and the
// ZCUBE_ZORDER_BY tag name it), its physical path (as stats and parquet
// name it) and how its values order.
type column struct {
	Logical  []string
	Physical []string
	kind     valueKind
}

// name is the logical name as Spark prints it: path elements joined by dots,
// an element quoted with backticks when it contains a dot or a backtick.
func (c column) name() string { return quotePath(c.Logical) }

func quotePath(path []string) string {
	parts := make([]string, len(path))
	for i, p := range path {
		if strings.ContainsAny(p, ".`") {
			p = "`" + strings.ReplaceAll(p, "`", "``") + "`"
		}
		parts[i] = p
	}
	return strings.Join(parts, ".")
}

// tableClusteringColumns reads the clustering columns (physical paths) the
// table records, in any of the shapes delta.ClusteringColumns accepts; nil
// when the table is not clustered.
func tableClusteringColumns(snap *delta.Snapshot) ([][]string, error) {
	cols, err := delta.ClusteringColumns(snap)
	if err != nil {
		return nil, fmt.Errorf("clustering columns: %w", err)
	}
	return cols, nil
}

// physicalName returns a field's column-mapping physical name, or its name.
func physicalName(f *deltaschema.StructField) string {
	if raw, ok := f.Metadata["delta.columnMapping.physicalName"]; ok {
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
	}
	return f.Name
}

// resolvePath walks the schema along path, matching each element against
// logical names (case-insensitively, as Spark resolves) or physical names.
// It returns the logical path, the physical path and the leaf type. Without
// a schema the path is taken as both logical and physical.
func resolvePath(schema *deltaschema.StructType, path []string, byPhysical bool) (logical, physical []string, typ *deltaschema.DataType, err error) {
	if schema == nil {
		return path, path, nil, nil
	}
	st := schema
	for i, p := range path {
		if st == nil {
			return nil, nil, nil, fmt.Errorf("column %s: %s is not a struct", quotePath(path), quotePath(path[:i]))
		}
		var found *deltaschema.StructField
		for _, f := range st.Fields {
			name := f.Name
			if byPhysical {
				name = physicalName(f)
			}
			if name == p || (!byPhysical && strings.EqualFold(name, p)) {
				found = f
				break
			}
		}
		if found == nil {
			return nil, nil, nil, fmt.Errorf("column %s not found in the table schema", quotePath(path))
		}
		logical = append(logical, found.Name)
		physical = append(physical, physicalName(found))
		typ = found.Type
		st = nil
		if typ != nil {
			st = typ.Struct
		}
	}
	return logical, physical, typ, nil
}

// clusteringColumns returns the columns to cluster by: the policy's override
// (logical paths) or the table's (physical paths), and where they came from.
func clusteringColumns(snap *delta.Snapshot, p Policy) ([]column, string, error) {
	paths, byPhysical, source := p.ClusteringColumns, false, "policy"
	if paths == nil {
		var err error
		paths, err = tableClusteringColumns(snap)
		if err != nil {
			return nil, "", err
		}
		byPhysical, source = true, "table"
	}
	if len(paths) == 0 {
		return nil, "", nil
	}
	if len(paths) > MaxClusteringColumns {
		return nil, "", fmt.Errorf("%d clustering columns (%s) exceed the limit of %d", len(paths), source, MaxClusteringColumns)
	}
	cols := make([]column, 0, len(paths))
	for _, path := range paths {
		if err := validPath(path); err != nil {
			return nil, "", fmt.Errorf("clustering column from %s: %w", source, err)
		}
		l, ph, typ, err := resolvePath(snap.Schema, path, byPhysical)
		if err != nil {
			return nil, "", fmt.Errorf("clustering column from %s: %w", source, err)
		}
		cols = append(cols, column{Logical: l, Physical: ph, kind: kindOf(typ)})
	}
	return cols, source, nil
}

// StatsColumns returns the physical paths of the columns whose statistics
// planning snap under p reads beyond numRecords (its clustering columns;
// nil when there are none): what a poller keeps of each file's stats
// (delta.Snapshot.Slim) so that BacklogOf of the slim snapshot is
// BacklogOf of snap.
func StatsColumns(snap *delta.Snapshot, p Policy) ([][]string, error) {
	cols, _, err := clusteringColumns(snap, p)
	if err != nil {
		return nil, err
	}
	var out [][]string
	for _, c := range cols {
		out = append(out, c.Physical)
	}
	return out, nil
}
