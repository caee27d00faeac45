package delta

import (
	"encoding/base64"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
)

// Logical values are what `compactord cat` prints and what tests compare.
// Go representations per Delta type:
//
//	null                    nil
//	boolean                 bool
//	byte, short, int, long  int64
//	float                   float32
//	double                  float64
//	string                  string
//	binary                  []byte
//	date                    Date
//	timestamp               Timestamp
//	timestamp_ntz           TimestampNTZ
//	decimal(P,S)            Decimal
//	struct                  *LogicalStruct
//	array                   []any
//	map                     *LogicalMap

// Date is a date as days since 1970-01-01.
type Date int32

// String formats the date as yyyy-MM-dd.
func (d Date) String() string {
	return time.Unix(int64(d)*86400, 0).UTC().Format("2006-01-02")
}

// Timestamp is an instant in microseconds since the epoch (UTC).
type Timestamp int64

// String formats the instant as RFC 3339 with microseconds, in UTC.
func (t Timestamp) String() string {
	return microsTime(int64(t)).Format("2006-01-02T15:04:05.000000Z")
}

// TimestampNTZ is a wall-clock date-time without zone, in microseconds
// since 1970-01-01T00:00:00.
type TimestampNTZ int64

// String formats the date-time as yyyy-MM-ddTHH:mm:ss.ffffff.
func (t TimestampNTZ) String() string {
	return microsTime(int64(t)).Format("2006-01-02T15:04:05.000000")
}

func microsTime(us int64) time.Time {
	return time.Unix(floorDiv(us, 1_000_000), (us-floorDiv(us, 1_000_000)*1_000_000)*1000).UTC()
}

// Decimal is an exact decimal: Unscaled * 10^-Scale.
type Decimal struct {
	Unscaled *big.Int
	Scale    int
}

// String renders the decimal with exactly Scale fractional digits.
func (d Decimal) String() string {
	s := new(big.Int).Abs(d.Unscaled).String()
	neg := d.Unscaled.Sign() < 0
	if d.Scale > 0 {
		for len(s) <= d.Scale {
			s = "0" + s
		}
		s = s[:len(s)-d.Scale] + "." + s[len(s)-d.Scale:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// LogicalStruct is a struct value with its logical field names, in schema
// order.
type LogicalStruct struct {
	Names  []string
	Values []any
}

// Get returns the value of the named field and whether it exists.
func (s *LogicalStruct) Get(name string) (any, bool) {
	for i, n := range s.Names {
		if n == name {
			return s.Values[i], true
		}
	}
	return nil, false
}

// LogicalMap is a map value, entries in file order.
type LogicalMap struct {
	Keys   []any
	Values []any
}

// AppendJSON appends the JSON form of a logical value: dates "yyyy-MM-dd",
// timestamps RFC 3339 with microseconds in UTC, timestamp_ntz without zone,
// decimals as exact JSON numbers, binary as base64, NaN and infinities as
// the strings "NaN", "Infinity", "-Infinity", structs as objects in schema
// order, maps with string keys as objects, other maps as
// [{"key":k,"value":v},...].
func AppendJSON(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float32:
		return appendFloat(b, float64(x), 32)
	case float64:
		return appendFloat(b, x, 64)
	case string:
		return appendJSONString(b, x)
	case []byte:
		return appendJSONString(b, base64.StdEncoding.EncodeToString(x))
	case Date, Timestamp, TimestampNTZ:
		return appendJSONString(b, x.(fmt.Stringer).String())
	case Decimal:
		return append(b, x.String()...)
	case *LogicalStruct:
		b = append(b, '{')
		for i, n := range x.Names {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, n)
			b = append(b, ':')
			b = AppendJSON(b, x.Values[i])
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSON(b, e)
		}
		return append(b, ']')
	case *LogicalMap:
		stringKeys := true
		for _, k := range x.Keys {
			if _, ok := k.(string); !ok {
				stringKeys = false
				break
			}
		}
		if stringKeys {
			b = append(b, '{')
			for i, k := range x.Keys {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendJSONString(b, k.(string))
				b = append(b, ':')
				b = AppendJSON(b, x.Values[i])
			}
			return append(b, '}')
		}
		b = append(b, '[')
		for i, k := range x.Keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"key":`...)
			b = AppendJSON(b, k)
			b = append(b, `,"value":`...)
			b = AppendJSON(b, x.Values[i])
			b = append(b, '}')
		}
		return append(b, ']')
	}
	return appendJSONString(b, fmt.Sprintf("%v", v))
}

func appendFloat(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits)
}

const hexDigits = "0123456789abcdef"

func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// RowDecoder turns rows of a table's data schema (as FileScan returns them)
// plus a file's partition values into logical rows: logical column names,
// all columns of the table schema in order (partition columns and void
// columns included).
type RowDecoder struct {
	shape *dataShape
	// scanShape, when set, is the shape files are scanned in (the rewrite
	// shape of ScanLogicalRows with RowIDs): shape plus trailing columns.
	scanShape *dataShape
	schema    *StructType
	meta      *Metadata
	loc       *time.Location
	// cols[i] tells where column i of the table schema comes from.
	cols []decoderCol
	cur  []int
}

type decoderCol struct {
	name      string
	part      bool
	partName  string // physical name in partitionValues
	void      bool
	dataIndex int // index among shape.root.children
	dt        *DataType
}

// NewRowDecoder builds a decoder for the snapshot's schema. loc is the zone
// of zone-less timestamp partition values (nil = UTC).
func NewRowDecoder(snap *Snapshot, loc *time.Location) (*RowDecoder, error) {
	ds, err := newDataShape(snap)
	if err != nil {
		return nil, err
	}
	schema := snap.Schema
	if schema == nil {
		if schema, err = ParseSchema(snap.Metadata.SchemaString); err != nil {
			return nil, err
		}
	}
	return newRowDecoder(ds, schema, &snap.Metadata, loc)
}

func newRowDecoder(ds *dataShape, schema *StructType, meta *Metadata, loc *time.Location) (*RowDecoder, error) {
	if loc == nil {
		loc = time.UTC
	}
	d := &RowDecoder{shape: ds, schema: schema, meta: meta, loc: loc, cur: make([]int, len(ds.leaves))}
	part := map[string]bool{}
	if meta != nil {
		for _, c := range meta.PartitionColumns {
			part[lower(c)] = true
		}
	}
	di := 0
	for _, f := range schema.Fields {
		c := decoderCol{name: f.Name, dt: f.Type}
		switch {
		case part[lower(f.Name)]:
			c.part = true
			c.partName = physName(f, ds.mode)
		case isVoid(f.Type):
			c.void = true
		default:
			if di >= len(ds.root.children) || ds.root.children[di].field != f {
				return nil, fmt.Errorf("internal error: data column %q out of order", f.Name)
			}
			c.dataIndex = di
			di++
		}
		d.cols = append(d.cols, c)
	}
	return d, nil
}

// PartitionValues parses a file's partition values (see
// ParsePartitionValues) with the decoder's zone.
func (d *RowDecoder) PartitionValues(add *Add) (map[string]any, error) {
	return ParsePartitionValues(d.meta, d.schema, add.PartitionValues, d.loc)
}

// Decode converts one data-schema row and the file's parsed partition
// values (keyed by physical name) into a logical row.
func (d *RowDecoder) Decode(row parquet.Row, part map[string]any) (*LogicalStruct, error) {
	data, err := d.shape.decodeData(row, d.cur)
	if err != nil {
		return nil, err
	}
	out := &LogicalStruct{Names: make([]string, len(d.cols)), Values: make([]any, len(d.cols))}
	for i, c := range d.cols {
		out.Names[i] = c.name
		switch {
		case c.part:
			out.Values[i] = part[c.partName]
		case c.void:
		default:
			out.Values[i] = data[c.dataIndex]
		}
	}
	return out, nil
}

// decodeData assembles the top-level data values of one row (record
// assembly from repetition and definition levels).
func (ds *dataShape) decodeData(row parquet.Row, cur []int) ([]any, error) {
	for i := range cur {
		cur[i] = -1
	}
	col := -1
	for i, v := range row {
		if c := v.Column(); c != col {
			if c < 0 || c >= len(cur) {
				return nil, fmt.Errorf("row has a value for unknown column %d", c)
			}
			cur[c] = i
			col = c
		}
	}
	for c, i := range cur {
		if i < 0 {
			return nil, fmt.Errorf("row has no value for column %s", ds.leaves[c].path)
		}
	}
	a := &assembler{row: row, cur: cur}
	out := make([]any, len(ds.root.children))
	for i, c := range ds.root.children {
		v, err := a.decode(c)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

type assembler struct {
	row parquet.Row
	cur []int
}

func (a *assembler) peek(col int) (parquet.Value, bool) {
	i := a.cur[col]
	if i < 0 || i >= len(a.row) || a.row[i].Column() != col {
		return parquet.Value{}, false
	}
	return a.row[i], true
}

// skip consumes one entry of every leaf of n (n or an ancestor is null or
// an empty list/map).
func (a *assembler) skip(n *shapeNode) {
	for c := n.firstCol; c < n.endCol; c++ {
		a.cur[c]++
	}
}

func (a *assembler) decode(n *shapeNode) (any, error) {
	v, ok := a.peek(n.firstCol)
	if !ok {
		return nil, fmt.Errorf("column %s: missing value", n.path)
	}
	if v.DefinitionLevel() < n.def {
		a.skip(n)
		return nil, nil
	}
	switch n.kind {
	case shapeLeaf:
		a.cur[n.col]++
		return leafLogical(v, n.dt)
	case shapeStruct:
		s := &LogicalStruct{Names: make([]string, len(n.children)), Values: make([]any, len(n.children))}
		for i, c := range n.children {
			s.Names[i] = c.field.Name
			x, err := a.decode(c)
			if err != nil {
				return nil, err
			}
			s.Values[i] = x
		}
		return s, nil
	case shapeList, shapeMap:
		var list []any
		m := &LogicalMap{}
		if v.DefinitionLevel() < n.def+1 {
			a.skip(n)
		} else {
			for {
				if n.kind == shapeList {
					x, err := a.decode(n.children[0])
					if err != nil {
						return nil, err
					}
					list = append(list, x)
				} else {
					k, err := a.decode(n.children[0])
					if err != nil {
						return nil, err
					}
					val, err := a.decode(n.children[1])
					if err != nil {
						return nil, err
					}
					m.Keys = append(m.Keys, k)
					m.Values = append(m.Values, val)
				}
				next, ok := a.peek(n.firstCol)
				if !ok || next.RepetitionLevel() != n.rep {
					break
				}
			}
		}
		if n.kind == shapeMap {
			return m, nil
		}
		if list == nil {
			list = []any{}
		}
		return list, nil
	}
	return nil, fmt.Errorf("internal error: shape kind at %s", n.path)
}

// leafLogical converts a non-null value of the data schema into its logical
// Go value.
// LeafValue converts one non-null value of a data-schema row (as FileScan
// returns it) of a primitive column of type dt into its logical Go value
// (see the table above). Callers that need a single column use it instead
// of decoding whole rows.
func LeafValue(v parquet.Value, dt *DataType) (any, error) { return leafLogical(v, dt) }

func leafLogical(v parquet.Value, dt *DataType) (any, error) {
	switch dt.Name {
	case "boolean":
		return v.Boolean(), nil
	case "byte", "short", "integer":
		return int64(v.Int32()), nil
	case "long":
		return v.Int64(), nil
	case "float":
		return v.Float(), nil
	case "double":
		return v.Double(), nil
	case "string":
		return string(v.ByteArray()), nil
	case "binary":
		return append([]byte{}, v.ByteArray()...), nil
	case "date":
		return Date(v.Int32()), nil
	case "timestamp":
		return Timestamp(v.Int64()), nil
	case "timestamp_ntz":
		return TimestampNTZ(v.Int64()), nil
	case "decimal":
		return Decimal{Unscaled: decimalUnscaled(v), Scale: dt.Scale}, nil
	}
	return nil, fmt.Errorf("no logical value for type %s", dt.String())
}
