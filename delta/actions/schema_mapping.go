package actions

import (
	"fmt"

	"github.com/compactord/compactord/delta/props"
	deltaschema "github.com/compactord/compactord/delta/schema"
)

// ColumnMappingMode returns the table's column mapping mode: "none", "name"
// or "id" (Properties.ColumnMappingMode). An unknown mode is an error
// naming it.
func ColumnMappingMode(meta *Metadata) (string, error) {
	p := meta.Properties()
	if err := p.Check(props.PropColumnMappingMode); err != nil {
		return "", err
	}
	return p.ColumnMappingMode, nil
}

// PartitionValueKeys returns the keys under which add actions carry the
// table's partition values (add.partitionValues), in partitionColumns order:
// the columns' physical names when column mapping is on, else their names.
func PartitionValueKeys(meta *Metadata, schema *deltaschema.StructType) ([]string, error) {
	cols := meta.PartitionColumns
	if len(cols) == 0 {
		return nil, nil
	}
	mode, err := ColumnMappingMode(meta)
	if err != nil {
		return nil, err
	}
	if mode == deltaschema.ColumnMappingNone {
		return cols, nil
	}
	if schema == nil {
		return nil, fmt.Errorf("column mapping mode %q but no parsed schema", mode)
	}
	out := make([]string, len(cols))
	for i, c := range cols {
		f := schema.Field(c)
		if f == nil {
			return nil, fmt.Errorf("partition column %q is not in the schema", c)
		}
		if _, ok := f.Metadata[deltaschema.MetaColumnMappingPhysicalName]; !ok {
			return nil, fmt.Errorf("partition column %q has no %s under column mapping mode %q", c, deltaschema.MetaColumnMappingPhysicalName, mode)
		}
		out[i] = deltaschema.PhysicalName(f)
	}
	return out, nil
}

// PartitionFields returns the schema fields of the table's partition
// columns, in partitionColumns order.
func PartitionFields(meta *Metadata, schema *deltaschema.StructType) ([]*deltaschema.StructField, error) {
	out := make([]*deltaschema.StructField, 0, len(meta.PartitionColumns))
	for _, c := range meta.PartitionColumns {
		f := schema.Field(c)
		if f == nil {
			return nil, fmt.Errorf("partition column %q is not in the schema", c)
		}
		out = append(out, f)
	}
	return out, nil
}
