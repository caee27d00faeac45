package schema

import "encoding/json"

// DataType is a Delta schema type. Exactly one shape is used:
//   - primitive: Name is "string", "long", "integer", "short", "byte",
//     "float", "double", "boolean", "binary", "date", "timestamp",
//     "timestamp_ntz", "void", "variant", or "decimal(P,S)" (Precision/Scale set);
//   - Struct != nil; Array: ElementType != nil; Map: KeyType/ValueType != nil.
type DataType struct {
	Name              string
	Precision, Scale  int
	Struct            *StructType
	ElementType       *DataType
	ContainsNull      bool
	KeyType           *DataType
	ValueType         *DataType
	ValueContainsNull bool
}

// StructType is a Delta struct schema.
type StructType struct {
	Fields []*StructField
}

// StructField is one field of a struct, with its metadata (column mapping
// ids and physical names, type changes, generation expressions...) kept raw.
type StructField struct {
	Name     string
	Type     *DataType
	Nullable bool
	Metadata map[string]json.RawMessage
}
