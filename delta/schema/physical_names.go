package schema

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Column mapping modes (table property delta.columnMapping.mode).
const (
	ColumnMappingNone = "none"
	ColumnMappingName = "name"
	ColumnMappingID   = "id"
)

// Field metadata keys used by column mapping.
const (
	MetaColumnMappingID           = "delta.columnMapping.id"
	MetaColumnMappingPhysicalName = "delta.columnMapping.physicalName"
	MetaTypeChanges               = "delta.typeChanges"
)

// ParseColumnMappingMode reads delta.columnMapping.mode (any case).
func ParseColumnMappingMode(v string) (string, error) {
	switch strings.ToLower(v) {
	case ColumnMappingNone:
		return ColumnMappingNone, nil
	case ColumnMappingName:
		return ColumnMappingName, nil
	case ColumnMappingID:
		return ColumnMappingID, nil
	}
	return "", fmt.Errorf("unsupported column mapping mode %q", v)
}

// PhysicalName returns the field's physical name: the
// delta.columnMapping.physicalName metadata when present, else the logical
// name. With mode "none" callers should use the logical name; tables upgraded
// to column mapping keep their original names as physical names.
func PhysicalName(f *StructField) string {
	if raw, ok := f.Metadata[MetaColumnMappingPhysicalName]; ok {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil && s != "" {
			return s
		}
	}
	return f.Name
}

// FieldID returns the field's delta.columnMapping.id and whether it is set.
func FieldID(f *StructField) (int, bool) {
	raw, ok := f.Metadata[MetaColumnMappingID]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 32)
	if err != nil {
		return 0, false
	}
	return int(n), true
}

// PhysName returns the name used in data files under the given mode.
func PhysName(f *StructField, mode string) string {
	if mode == ColumnMappingNone {
		return f.Name
	}
	return PhysicalName(f)
}

// PhysicalPath maps a logical column path (struct field names, e.g.
// ["a","b"]) to the physical path used in data files, stats and partition
// values. Logical names resolve case-insensitively as in Spark. Without
// column mapping metadata the path is returned with the schema's spelling.
func (s *StructType) PhysicalPath(logical []string) ([]string, error) {
	return s.mapPath(logical, false)
}

// LogicalPath maps a physical path back to logical field names.
func (s *StructType) LogicalPath(physical []string) ([]string, error) {
	return s.mapPath(physical, true)
}

func (s *StructType) mapPath(path []string, fromPhysical bool) ([]string, error) {
	if len(path) == 0 {
		return nil, fmt.Errorf("empty column path")
	}
	out := make([]string, 0, len(path))
	cur := s
	for i, name := range path {
		if cur == nil {
			return nil, fmt.Errorf("column %q: %q is not a struct", strings.Join(path, "."), strings.Join(path[:i], "."))
		}
		var f *StructField
		if fromPhysical {
			for _, c := range cur.Fields {
				if PhysicalName(c) == name {
					f = c
					break
				}
			}
		} else {
			f = cur.Field(name)
		}
		if f == nil {
			return nil, fmt.Errorf("column %q not found in schema", strings.Join(path[:i+1], "."))
		}
		if fromPhysical {
			out = append(out, f.Name)
		} else {
			out = append(out, PhysicalName(f))
		}
		cur = f.Type.Struct
	}
	return out, nil
}

// PhysicalSchema returns a copy of s whose field names are the physical
// names under mode (metadata is kept). With mode "none" it returns s.
func (s *StructType) PhysicalSchema(mode string) *StructType {
	if mode == ColumnMappingNone {
		return s
	}
	return physicalStruct(s)
}

func physicalStruct(s *StructType) *StructType {
	out := &StructType{Fields: make([]*StructField, len(s.Fields))}
	for i, f := range s.Fields {
		out.Fields[i] = &StructField{Name: PhysicalName(f), Type: physicalType(f.Type), Nullable: f.Nullable, Metadata: f.Metadata}
	}
	return out
}

func physicalType(t *DataType) *DataType {
	switch {
	case t.Struct != nil:
		return &DataType{Struct: physicalStruct(t.Struct)}
	case t.ElementType != nil:
		c := *t
		c.ElementType = physicalType(t.ElementType)
		return &c
	case t.KeyType != nil:
		c := *t
		c.KeyType = physicalType(t.KeyType)
		c.ValueType = physicalType(t.ValueType)
		return &c
	}
	return t
}
