package delta

import (
	"fmt"
	"math/big"
	"reflect"

	"github.com/parquet-go/parquet-go"

	deltaschema "github.com/compactord/compactord/delta/schema"
)

// The parquet nodes both the scan's schema mapping and checkpoint writing
// build: leaves for Delta primitive types, groups that keep field order,
// and the fixed-width decimal encoding.

// DecimalBytes is the minimal two's-complement width holding precision
// decimal digits (Spark's Decimal.minBytesForPrecision).
func DecimalBytes(precision int) int {
	n := 1
	for {
		// max value with n bytes: 2^(8n-1)-1 >= 10^precision-1
		if float64(8*n-1) >= float64(precision)*3.321928094887362 {
			return n
		}
		n++
	}
}

// LeafNode is the parquet leaf compactord writes for the primitive Delta
// type t; it fails for variant and for types without a parquet mapping.
func LeafNode(t *deltaschema.DataType) (parquet.Node, error) {
	switch t.Name {
	case "boolean":
		return parquet.Leaf(parquet.BooleanType), nil
	case "byte":
		return parquet.Int(8), nil
	case "short":
		return parquet.Int(16), nil
	case "integer":
		return parquet.Int(32), nil
	case "long":
		return parquet.Int(64), nil
	case "float":
		return parquet.Leaf(parquet.FloatType), nil
	case "double":
		return parquet.Leaf(parquet.DoubleType), nil
	case "string":
		return parquet.String(), nil
	case "binary":
		return parquet.Leaf(parquet.ByteArrayType), nil
	case "date":
		return parquet.Date(), nil
	case "timestamp":
		return parquet.TimestampAdjusted(parquet.Microsecond, true), nil
	case "timestamp_ntz":
		return parquet.TimestampAdjusted(parquet.Microsecond, false), nil
	case "decimal":
		switch {
		case t.Precision <= 9:
			return parquet.Decimal(t.Scale, t.Precision, parquet.Int32Type), nil
		case t.Precision <= 18:
			return parquet.Decimal(t.Scale, t.Precision, parquet.Int64Type), nil
		default:
			return parquet.Decimal(t.Scale, t.Precision, parquet.FixedLenByteArrayType(DecimalBytes(t.Precision))), nil
		}
	case "variant":
		return nil, fmt.Errorf("variant type is not supported by this build")
	}
	return nil, fmt.Errorf("type %s has no parquet mapping", t.String())
}

// orderedGroup is a parquet group whose fields keep the order they were
// given in (parquet.Group sorts them by name; Spark writes schema order).
type orderedGroup struct {
	parquet.Group
	fields []parquet.Field
}

func (g *orderedGroup) Fields() []parquet.Field { return g.fields }

func (g *orderedGroup) String() string { return parquet.NewSchema("", g).String() }

func (g *orderedGroup) GoType() reflect.Type {
	grp := parquet.Group{}
	for _, f := range g.fields {
		grp[f.Name()] = f
	}
	return grp.GoType()
}

// namedField names a node inside an orderedGroup (NamedField).
type namedField struct {
	parquet.Node
	name string
}

func (f namedField) Name() string { return f.name }

func (f namedField) Value(base reflect.Value) reflect.Value { return reflect.Value{} }

// DecimalToBytes encodes u as big-endian two's complement of width bytes.
func DecimalToBytes(u *big.Int, width int) []byte {
	out := make([]byte, width)
	if u.Sign() >= 0 {
		u.FillBytes(out)
		return out
	}
	// Two's complement: 2^(8*width) + u.
	t := new(big.Int).Lsh(big.NewInt(1), uint(8*width))
	t.Add(t, u)
	t.FillBytes(out)
	return out
}

// NewOrderedGroup is a parquet group of fields that keeps their order
// (parquet.Group sorts them by name; Spark writes schema order).
func NewOrderedGroup(fields []parquet.Field) parquet.Node {
	return &orderedGroup{fields: fields}
}

// NamedField is node n under the field name name, for NewOrderedGroup.
func NamedField(name string, n parquet.Node) parquet.Field {
	return namedField{Node: n, name: name}
}
