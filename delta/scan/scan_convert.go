package scan

import (
	"fmt"
	"math/big"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/schema"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
)

// valueConv converts a non-null file value into the target type. Byte
// slices of the result must not alias the file's buffers: conversions copy
// them into the arena.
type valueConv func(v parquet.Value, a *byteArena) (parquet.Value, error)

// byteArena hands out byte slices carved from large chunks, so that the rows a
// FileScan returns own their bytes without one allocation per value. Old
// chunks are never written again, so returned slices stay valid.
type byteArena struct{ buf []byte }

const arenaChunk = 256 << 10

// reset recycles the current chunk (only when no returned row still uses it).
func (a *byteArena) reset() { a.buf = a.buf[:0] }

func (a *byteArena) copy(b []byte) []byte {
	if len(b) == 0 {
		return []byte{}
	}
	if len(b) > cap(a.buf)-len(a.buf) {
		size := arenaChunk
		if len(b) > size/4 {
			// Big values get their own allocation.
			return append([]byte(nil), b...)
		}
		a.buf = make([]byte, 0, size)
	}
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	return a.buf[start:len(a.buf):len(a.buf)]
}

// srcInfo is what the converter needs to know about a file column.
type srcInfo struct {
	kind     parquet.Kind
	logical  *format.LogicalType
	decimal  *format.DecimalType
	ts       *format.TimestampType
	intType  *format.IntType
	isDate   bool
	typeName string
}

func describeSrc(n parquet.Node) srcInfo {
	t := n.Type()
	si := srcInfo{kind: t.Kind(), logical: t.LogicalType(), typeName: t.String()}
	if si.logical != nil {
		switch lt := si.logical.Value.(type) {
		case *format.DecimalType:
			si.decimal = lt
		case *format.TimestampType:
			si.ts = lt
		case *format.IntType:
			si.intType = lt
		case *format.DateType:
			si.isDate = true
		}
	}
	return si
}

func copyBytes(v parquet.Value, a *byteArena) (parquet.Value, error) {
	if v.Kind() == parquet.FixedLenByteArray {
		return parquet.FixedLenByteArrayValue(a.copy(v.ByteArray())), nil
	}
	return parquet.ByteArrayValue(a.copy(v.ByteArray())), nil
}

// unchangedValue is the conversion of a column whose values need none.
func unchangedValue(v parquet.Value, _ *byteArena) (parquet.Value, error) { return v, nil }

// julianEpoch is the Julian day number of 1970-01-01 (INT96 timestamps).
const julianEpoch = 2440588

// int96Micros converts an INT96 timestamp (nanos of day, Julian day) to
// microseconds since the epoch, flooring sub-microsecond parts.
func int96Micros(i deprecated.Int96) int64 {
	nanos := int64(uint64(i[1])<<32 | uint64(i[0]))
	days := int64(i[2]) - julianEpoch
	return days*86400_000_000 + schema.FloorDiv(nanos, 1000)
}

func newValueConv(srcNode parquet.Node, dt *schema.DataType) (valueConv, error) {
	si := describeSrc(srcNode)
	mismatch := func() (valueConv, error) {
		return nil, fmt.Errorf("cannot read file type %s as table type %s", si.typeName, dt.String())
	}
	unsigned := si.intType != nil && !si.intType.IsSigned
	switch dt.Name {
	case "boolean":
		if si.kind == parquet.Boolean {
			return unchangedValue, nil
		}
	case "byte", "short", "integer":
		if si.kind == parquet.Int32 && si.decimal == nil && !si.isDate {
			return unchangedValue, nil
		}
	case "long":
		switch {
		case si.decimal != nil || si.isDate || si.ts != nil:
		case si.kind == parquet.Int64:
			return unchangedValue, nil
		case si.kind == parquet.Int32 && unsigned:
			return func(v parquet.Value, _ *byteArena) (parquet.Value, error) {
				return parquet.Int64Value(int64(uint32(v.Int32()))), nil
			}, nil
		case si.kind == parquet.Int32:
			return func(v parquet.Value, _ *byteArena) (parquet.Value, error) {
				return parquet.Int64Value(int64(v.Int32())), nil
			}, nil
		}
	case "float":
		if si.kind == parquet.Float {
			return unchangedValue, nil
		}
	case "double":
		switch {
		case si.decimal != nil || si.isDate || si.ts != nil:
		case si.kind == parquet.Double:
			return unchangedValue, nil
		case si.kind == parquet.Float:
			return func(v parquet.Value, _ *byteArena) (parquet.Value, error) {
				return parquet.DoubleValue(float64(v.Float())), nil
			}, nil
		case si.kind == parquet.Int32:
			return func(v parquet.Value, _ *byteArena) (parquet.Value, error) {
				return parquet.DoubleValue(float64(v.Int32())), nil
			}, nil
		case si.kind == parquet.Int64:
			return func(v parquet.Value, _ *byteArena) (parquet.Value, error) {
				return parquet.DoubleValue(float64(v.Int64())), nil
			}, nil
		}
	case "string", "binary":
		if si.kind == parquet.ByteArray || si.kind == parquet.FixedLenByteArray {
			return func(v parquet.Value, a *byteArena) (parquet.Value, error) {
				return parquet.ByteArrayValue(a.copy(v.ByteArray())), nil
			}, nil
		}
	case "date":
		if si.kind == parquet.Int32 && (si.isDate || si.logical == nil) {
			return unchangedValue, nil
		}
	case "timestamp", "timestamp_ntz":
		switch {
		case si.kind == parquet.Int96:
			return func(v parquet.Value, _ *byteArena) (parquet.Value, error) {
				return parquet.Int64Value(int96Micros(v.Int96())), nil
			}, nil
		case si.kind == parquet.Int64 && si.ts != nil:
			switch si.ts.Unit.Value.(type) {
			case *format.MilliSeconds:
				return func(v parquet.Value, _ *byteArena) (parquet.Value, error) {
					return parquet.Int64Value(v.Int64() * 1000), nil
				}, nil
			case *format.NanoSeconds:
				return func(v parquet.Value, _ *byteArena) (parquet.Value, error) {
					return parquet.Int64Value(schema.FloorDiv(v.Int64(), 1000)), nil
				}, nil
			default:
				return unchangedValue, nil
			}
		case si.kind == parquet.Int64 && si.logical == nil:
			return unchangedValue, nil
		case si.kind == parquet.Int32 && si.isDate && dt.Name == "timestamp_ntz":
			// Type widening date -> timestamp_ntz: midnight of the day.
			return func(v parquet.Value, _ *byteArena) (parquet.Value, error) {
				return parquet.Int64Value(int64(v.Int32()) * 86400_000_000), nil
			}, nil
		}
	case "decimal":
		return newDecimalConv(si, dt)
	}
	return mismatch()
}

// newDecimalConv reads decimals of any physical encoding (and integers, for
// integer -> decimal widening) as decimal(P,S) in the physical type
// compactord writes.
func newDecimalConv(si srcInfo, dt *schema.DataType) (valueConv, error) {
	srcScale := 0
	switch {
	case si.decimal != nil:
		srcScale = int(si.decimal.Scale)
	case si.kind == parquet.Int32 || si.kind == parquet.Int64:
		if si.ts != nil || si.isDate {
			return nil, fmt.Errorf("cannot read file type %s as table type %s", si.typeName, dt.String())
		}
	default:
		return nil, fmt.Errorf("cannot read file type %s as table type %s", si.typeName, dt.String())
	}
	if srcScale > dt.Scale {
		return nil, fmt.Errorf("cannot read file type %s as table type %s: scale would shrink", si.typeName, dt.String())
	}
	tgtKind := parquet.FixedLenByteArray
	switch {
	case dt.Precision <= 9:
		tgtKind = parquet.Int32
	case dt.Precision <= 18:
		tgtKind = parquet.Int64
	}
	width := delta.DecimalBytes(dt.Precision)
	if srcScale == dt.Scale {
		// Fast paths: same scale, same physical kind.
		switch {
		case si.kind == tgtKind && tgtKind != parquet.FixedLenByteArray:
			return unchangedValue, nil
		case si.kind == parquet.Int32 && tgtKind == parquet.Int64:
			return func(v parquet.Value, _ *byteArena) (parquet.Value, error) {
				return parquet.Int64Value(int64(v.Int32())), nil
			}, nil
		case si.kind == parquet.FixedLenByteArray && tgtKind == parquet.FixedLenByteArray && si.decimal != nil &&
			delta.DecimalBytes(int(si.decimal.Precision)) == width:
			return copyBytes, nil
		}
	}
	mul := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(dt.Scale-srcScale)), nil)
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(dt.Precision)), nil)
	return func(v parquet.Value, a *byteArena) (parquet.Value, error) {
		u := decimalUnscaled(v)
		if mul.Cmp(big.NewInt(1)) != 0 {
			u.Mul(u, mul)
		}
		if new(big.Int).Abs(u).Cmp(limit) >= 0 {
			return parquet.Value{}, fmt.Errorf("decimal value %s (scale %d) overflows %s", u.String(), dt.Scale, dt.String())
		}
		switch tgtKind {
		case parquet.Int32:
			return parquet.Int32Value(int32(u.Int64())), nil
		case parquet.Int64:
			return parquet.Int64Value(u.Int64()), nil
		}
		return parquet.FixedLenByteArrayValue(a.copy(delta.DecimalToBytes(u, width))), nil
	}, nil
}

// decimalUnscaled returns the unscaled integer of a decimal value stored as
// INT32, INT64 or big-endian two's complement bytes.
func decimalUnscaled(v parquet.Value) *big.Int {
	switch v.Kind() {
	case parquet.Int32:
		return big.NewInt(int64(v.Int32()))
	case parquet.Int64:
		return big.NewInt(v.Int64())
	}
	return bytesToBigInt(v.ByteArray())
}

func bytesToBigInt(b []byte) *big.Int {
	u := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		// Negative: subtract 2^(8*len).
		u.Sub(u, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return u
}

// sameLeafType reports whether file values of srcNode are already values of
// the target type as compactord writes it (same physical type, same
// decimal scale and width, timestamps in microseconds).
func sameLeafType(srcNode parquet.Node, dt *schema.DataType) bool {
	si := describeSrc(srcNode)
	switch dt.Name {
	case "boolean":
		return si.kind == parquet.Boolean
	case "byte", "short", "integer", "date":
		return si.kind == parquet.Int32 && si.decimal == nil
	case "long":
		return si.kind == parquet.Int64 && si.decimal == nil && si.ts == nil
	case "float":
		return si.kind == parquet.Float
	case "double":
		return si.kind == parquet.Double
	case "string", "binary":
		return si.kind == parquet.ByteArray
	case "timestamp", "timestamp_ntz":
		if si.kind != parquet.Int64 || si.ts == nil {
			return false
		}
		_, micros := si.ts.Unit.Value.(*format.MicroSeconds)
		return micros
	case "decimal":
		if si.decimal == nil || int(si.decimal.Scale) != dt.Scale {
			return false
		}
		switch {
		case dt.Precision <= 9:
			return si.kind == parquet.Int32
		case dt.Precision <= 18:
			return si.kind == parquet.Int64
		}
		return si.kind == parquet.FixedLenByteArray && srcNode.Type().Length() == delta.DecimalBytes(dt.Precision)
	}
	return false
}
