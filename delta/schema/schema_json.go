package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// primitiveTypes are the Delta primitive type names this build knows.
var primitiveTypes = map[string]bool{
	"string": true, "long": true, "integer": true, "short": true, "byte": true,
	"float": true, "double": true, "boolean": true, "binary": true, "date": true,
	"timestamp": true, "timestamp_ntz": true, "void": true, "variant": true,
}

var decimalRe = regexp.MustCompile(`^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$`)

// ParseSchema parses a Delta schema JSON string (metaData.schemaString).
func ParseSchema(s string) (*StructType, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("parse schema: metaData has no schemaString")
	}
	var raw json.RawMessage
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	dt, err := parseDataType(raw)
	if err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	if dt.Struct == nil {
		return nil, fmt.Errorf("parse schema: top level type is %q, not a struct", dt.String())
	}
	return dt.Struct, nil
}

type rawField struct {
	Name     *string                    `json:"name"`
	Type     json.RawMessage            `json:"type"`
	Nullable *bool                      `json:"nullable"`
	Metadata map[string]json.RawMessage `json:"metadata"`
}

type rawComplex struct {
	Type              string          `json:"type"`
	Fields            []rawField      `json:"fields"`
	ElementType       json.RawMessage `json:"elementType"`
	ContainsNull      *bool           `json:"containsNull"`
	KeyType           json.RawMessage `json:"keyType"`
	ValueType         json.RawMessage `json:"valueType"`
	ValueContainsNull *bool           `json:"valueContainsNull"`
}

func parseDataType(raw json.RawMessage) (*DataType, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, fmt.Errorf("missing type")
	}
	if raw[0] == '"' {
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			return nil, err
		}
		return ParsePrimitive(name)
	}
	var c rawComplex
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("type %s: %w", raw, err)
	}
	switch c.Type {
	case "struct":
		st := &StructType{Fields: make([]*StructField, 0, len(c.Fields))}
		seen := map[string]bool{}
		for i, rf := range c.Fields {
			if rf.Name == nil {
				return nil, fmt.Errorf("struct field %d has no name", i)
			}
			ft, err := parseDataType(rf.Type)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", *rf.Name, err)
			}
			key := strings.ToLower(*rf.Name)
			if seen[key] {
				return nil, fmt.Errorf("duplicate field %q", *rf.Name)
			}
			seen[key] = true
			nullable := true
			if rf.Nullable != nil {
				nullable = *rf.Nullable
			}
			md := rf.Metadata
			if md == nil {
				md = map[string]json.RawMessage{}
			}
			st.Fields = append(st.Fields, &StructField{Name: *rf.Name, Type: ft, Nullable: nullable, Metadata: md})
		}
		return &DataType{Struct: st}, nil
	case "array":
		et, err := parseDataType(c.ElementType)
		if err != nil {
			return nil, fmt.Errorf("array element: %w", err)
		}
		return &DataType{ElementType: et, ContainsNull: c.ContainsNull == nil || *c.ContainsNull}, nil
	case "map":
		kt, err := parseDataType(c.KeyType)
		if err != nil {
			return nil, fmt.Errorf("map key: %w", err)
		}
		vt, err := parseDataType(c.ValueType)
		if err != nil {
			return nil, fmt.Errorf("map value: %w", err)
		}
		return &DataType{KeyType: kt, ValueType: vt, ValueContainsNull: c.ValueContainsNull == nil || *c.ValueContainsNull}, nil
	default:
		return nil, fmt.Errorf("unknown complex type %q", c.Type)
	}
}

func ParsePrimitive(name string) (*DataType, error) {
	if primitiveTypes[name] {
		return &DataType{Name: name}, nil
	}
	if m := decimalRe.FindStringSubmatch(name); m != nil {
		p, err1 := strconv.Atoi(m[1])
		s, err2 := strconv.Atoi(m[2])
		if err1 != nil || err2 != nil || p < 1 || p > 38 || s > p {
			return nil, fmt.Errorf("invalid decimal type %q", name)
		}
		return &DataType{Name: "decimal", Precision: p, Scale: s}, nil
	}
	if name == "decimal" {
		// Spark's default decimal is decimal(10,0).
		return &DataType{Name: "decimal", Precision: 10, Scale: 0}, nil
	}
	return nil, fmt.Errorf("unknown primitive type %q", name)
}

// IsPrimitive reports whether t is a primitive (not struct, array or map).
func (t *DataType) IsPrimitive() bool {
	return t.Struct == nil && t.ElementType == nil && t.KeyType == nil
}

// String renders the type in Delta's simple form ("long", "decimal(10,2)",
// "struct<...>", "array<...>", "map<...,...>").
func (t *DataType) String() string {
	switch {
	case t == nil:
		return "<nil>"
	case t.Struct != nil:
		parts := make([]string, len(t.Struct.Fields))
		for i, f := range t.Struct.Fields {
			parts[i] = f.Name + ":" + f.Type.String()
		}
		return "struct<" + strings.Join(parts, ",") + ">"
	case t.ElementType != nil:
		return "array<" + t.ElementType.String() + ">"
	case t.KeyType != nil:
		return "map<" + t.KeyType.String() + "," + t.ValueType.String() + ">"
	case t.Name == "decimal":
		return fmt.Sprintf("decimal(%d,%d)", t.Precision, t.Scale)
	default:
		return t.Name
	}
}

// MarshalJSON writes the type as Delta schema JSON.
func (t *DataType) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := t.writeJSON(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// MarshalJSON writes the struct as a Delta schema JSON document (the form of
// metaData.schemaString).
func (s *StructType) MarshalJSON() ([]byte, error) {
	return (&DataType{Struct: s}).MarshalJSON()
}

// String returns the schema JSON (errors are impossible for a well-formed
// StructType and render as an empty string).
func (s *StructType) String() string {
	b, err := s.MarshalJSON()
	if err != nil {
		return ""
	}
	return string(b)
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // marshalling a string cannot fail
	b.Write(enc)
}

// Field order follows Spark's DataType.json so that a parsed schema
// re-marshals to the same text.
func (t *DataType) writeJSON(b *bytes.Buffer) error {
	switch {
	case t == nil:
		return fmt.Errorf("marshal schema: nil type")
	case t.Struct != nil:
		b.WriteString(`{"type":"struct","fields":[`)
		for i, f := range t.Struct.Fields {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"name":`)
			writeJSONString(b, f.Name)
			b.WriteString(`,"type":`)
			if err := f.Type.writeJSON(b); err != nil {
				return fmt.Errorf("field %q: %w", f.Name, err)
			}
			b.WriteString(`,"nullable":`)
			b.WriteString(strconv.FormatBool(f.Nullable))
			b.WriteString(`,"metadata":`)
			if err := writeMetadata(b, f.Metadata); err != nil {
				return fmt.Errorf("field %q: %w", f.Name, err)
			}
			b.WriteByte('}')
		}
		b.WriteString(`]}`)
	case t.ElementType != nil:
		b.WriteString(`{"type":"array","elementType":`)
		if err := t.ElementType.writeJSON(b); err != nil {
			return err
		}
		b.WriteString(`,"containsNull":`)
		b.WriteString(strconv.FormatBool(t.ContainsNull))
		b.WriteByte('}')
	case t.KeyType != nil:
		if t.ValueType == nil {
			return fmt.Errorf("marshal schema: map without value type")
		}
		b.WriteString(`{"type":"map","keyType":`)
		if err := t.KeyType.writeJSON(b); err != nil {
			return err
		}
		b.WriteString(`,"valueType":`)
		if err := t.ValueType.writeJSON(b); err != nil {
			return err
		}
		b.WriteString(`,"valueContainsNull":`)
		b.WriteString(strconv.FormatBool(t.ValueContainsNull))
		b.WriteByte('}')
	case t.Name == "":
		return fmt.Errorf("marshal schema: empty type")
	default:
		writeJSONString(b, t.String())
	}
	return nil
}

// writeMetadata writes field metadata with sorted keys and compacted raw
// values (Spark writes metadata keys in insertion order; semantic equality
// is what matters to readers).
func writeMetadata(b *bytes.Buffer, md map[string]json.RawMessage) error {
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSONString(b, k)
		b.WriteByte(':')
		var c bytes.Buffer
		if err := json.Compact(&c, md[k]); err != nil {
			return fmt.Errorf("metadata %q: %w", k, err)
		}
		b.Write(c.Bytes())
	}
	b.WriteByte('}')
	return nil
}

// Field returns the field named name (exact match first, then
// case-insensitive as Spark resolves columns), or nil.
func (s *StructType) Field(name string) *StructField {
	for _, f := range s.Fields {
		if f.Name == name {
			return f
		}
	}
	for _, f := range s.Fields {
		if strings.EqualFold(f.Name, name) {
			return f
		}
	}
	return nil
}
