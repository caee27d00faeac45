package scan

import (
	"fmt"
	"strings"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	deltaschema "github.com/compactord/compactord/delta/schema"
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

// RowDecoder turns rows of a table's data schema (as FileScan returns them)
// plus a file's partition values into logical rows: logical column names,
// all columns of the table schema in order (partition columns and void
// columns included).
type RowDecoder struct {
	shape *dataShape
	// scanShape, when set, is the shape files are scanned in (the rewrite
	// shape of ScanLogicalRows with RowIDs): shape plus trailing columns.
	scanShape *dataShape
	schema    *deltaschema.StructType
	meta      *actions.Metadata
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
	dt        *deltaschema.DataType
}

// NewRowDecoder builds a decoder for the snapshot's schema. loc is the zone
// of zone-less timestamp partition values (nil = UTC).
func NewRowDecoder(snap *delta.Snapshot, loc *time.Location) (*RowDecoder, error) {
	ds, err := newDataShape(snap)
	if err != nil {
		return nil, err
	}
	schema := snap.Schema
	if schema == nil {
		if schema, err = deltaschema.ParseSchema(snap.Metadata.SchemaString); err != nil {
			return nil, err
		}
	}
	return newRowDecoder(ds, schema, &snap.Metadata, loc)
}

func newRowDecoder(ds *dataShape, schema *deltaschema.StructType, meta *actions.Metadata, loc *time.Location) (*RowDecoder, error) {
	if loc == nil {
		loc = time.UTC
	}
	d := &RowDecoder{shape: ds, schema: schema, meta: meta, loc: loc, cur: make([]int, len(ds.leaves))}
	part := map[string]bool{}
	if meta != nil {
		for _, c := range meta.PartitionColumns {
			part[strings.ToLower(c)] = true
		}
	}
	di := 0
	for _, f := range schema.Fields {
		c := decoderCol{name: f.Name, dt: f.Type}
		switch {
		case part[strings.ToLower(f.Name)]:
			c.part = true
			c.partName = deltaschema.PhysName(f, ds.mode)
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
func (d *RowDecoder) PartitionValues(add *actions.Add) (map[string]any, error) {
	return actions.ParsePartitionValues(d.meta, d.schema, add.PartitionValues, d.loc)
}

// Decode converts one data-schema row and the file's parsed partition
// values (keyed by physical name) into a logical row.
func (d *RowDecoder) Decode(row parquet.Row, part map[string]any) (*deltaschema.LogicalStruct, error) {
	data, err := d.shape.decodeData(row, d.cur)
	if err != nil {
		return nil, err
	}
	out := &deltaschema.LogicalStruct{Names: make([]string, len(d.cols)), Values: make([]any, len(d.cols))}
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
		s := &deltaschema.LogicalStruct{Names: make([]string, len(n.children)), Values: make([]any, len(n.children))}
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
		m := &deltaschema.LogicalMap{}
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
func LeafValue(v parquet.Value, dt *deltaschema.DataType) (any, error) { return leafLogical(v, dt) }

func leafLogical(v parquet.Value, dt *deltaschema.DataType) (any, error) {
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
		return deltaschema.Date(v.Int32()), nil
	case "timestamp":
		return deltaschema.Timestamp(v.Int64()), nil
	case "timestamp_ntz":
		return deltaschema.TimestampNTZ(v.Int64()), nil
	case "decimal":
		return deltaschema.Decimal{Unscaled: decimalUnscaled(v), Scale: dt.Scale}, nil
	}
	return nil, fmt.Errorf("no logical value for type %s", dt.String())
}
