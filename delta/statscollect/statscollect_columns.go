package statscollect

import (
	"strings"

	"github.com/compactord/compactord/delta/actions"
	deltaprops "github.com/compactord/compactord/delta/props"
	deltaschema "github.com/compactord/compactord/delta/schema"
)

// StatsFields returns the (logical) data columns that get statistics:
// those delta.dataSkippingStatsColumns names, else the first
// delta.dataSkippingNumIndexedCols leaves (default 32, -1 = all).
func StatsFields(meta *actions.Metadata, schema *deltaschema.StructType) ([]*deltaschema.StructField, error) {
	fields := dataFields(meta, schema)
	props := meta.Properties()
	if err := props.Check(deltaprops.PropStatsColumns, deltaprops.PropNumIndexedCols); err != nil {
		return nil, err
	}
	if props.StatsColumns != nil {
		return filterFields(fields, props.StatsColumns), nil
	}
	if props.NumIndexedCols >= 0 {
		fields, _ = truncateFields(fields, props.NumIndexedCols)
	}
	return fields, nil
}

// dataFields returns the schema's top-level fields minus the partition
// columns (matched case-insensitively, as Spark does).
func dataFields(meta *actions.Metadata, schema *deltaschema.StructType) []*deltaschema.StructField {
	part := make(map[string]bool, len(meta.PartitionColumns))
	for _, p := range meta.PartitionColumns {
		part[strings.ToLower(p)] = true
	}
	out := make([]*deltaschema.StructField, 0, len(schema.Fields))
	for _, f := range schema.Fields {
		if !part[strings.ToLower(f.Name)] {
			out = append(out, f)
		}
	}
	return out
}

// truncateFields keeps the first n leaf columns in schema order (nested
// struct leaves count one by one; arrays, maps and every other non-struct
// type count as one leaf) and returns the kept fields and the number of
// leaves kept.
func truncateFields(fields []*deltaschema.StructField, n int) ([]*deltaschema.StructField, int) {
	var out []*deltaschema.StructField
	count := 0
	for i := 0; i < len(fields) && count < n; i++ {
		f := fields[i]
		if f.Type.Struct != nil {
			sub, c := truncateFields(f.Type.Struct.Fields, n-count)
			count += c
			cp := *f
			cp.Type = &deltaschema.DataType{Struct: &deltaschema.StructType{Fields: sub}}
			out = append(out, &cp)
			continue
		}
		count++
		out = append(out, f)
	}
	return out, count
}

// filterFields keeps, in schema order, the columns named by the
// lower-cased paths: a path naming a struct keeps all its leaves, a longer
// path descends into it. Names that match nothing are ignored.
func filterFields(fields []*deltaschema.StructField, paths [][]string) []*deltaschema.StructField {
	var out []*deltaschema.StructField
	for _, f := range fields {
		lower := strings.ToLower(f.Name)
		whole := false
		var rest [][]string
		matched := false
		for _, p := range paths {
			if len(p) == 0 || p[0] != lower {
				continue
			}
			matched = true
			if len(p) == 1 {
				whole = true
			} else {
				rest = append(rest, p[1:])
			}
		}
		switch {
		case !matched:
		case whole:
			out = append(out, f)
		case f.Type.Struct != nil:
			cp := *f
			cp.Type = &deltaschema.DataType{Struct: &deltaschema.StructType{Fields: filterFields(f.Type.Struct.Fields, rest)}}
			out = append(out, &cp)
		}
	}
	return out
}
