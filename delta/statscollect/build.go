package statscollect

import (
	"fmt"
	"strings"
	"time"

	deltaschema "github.com/compactord/compactord/delta/schema"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
)

// statsBuilder maps selected schema fields onto parquet columns.
type statsBuilder struct {
	c    *StatsCollector
	pq   *parquet.Schema
	mode string
}

// node builds the stats node of field f whose parent group in the parquet
// schema is parent (nil: not present in the data) at definition level def.
func (b *statsBuilder) node(f *deltaschema.StructField, parent parquet.Node, path []string, def int) (*statsNode, error) {
	name := deltaschema.PhysName(f, b.mode)
	n := &statsNode{name: name, leaf: -1}
	path = append(path[:len(path):len(path)], name)
	var pn parquet.Node
	if parent != nil {
		pn = childNode(parent, name)
		if pn != nil {
			if !pn.Required() {
				def++
			}
			if pn.Repeated() {
				return nil, fmt.Errorf("column %s: repeated parquet field where the table has %s", strings.Join(path, "."), f.Type)
			}
		}
	}
	if f.Type.Struct != nil {
		for _, ch := range f.Type.Struct.Fields {
			cn, err := b.node(ch, pn, path, def)
			if err != nil {
				return nil, err
			}
			n.children = append(n.children, cn)
			n.minMax = n.minMax || cn.minMax
		}
		return n, nil
	}
	l := leafStats{cat: CategoryOf(f.Type), col: -1, nullDef: def, tsMul: 1, tsDiv: 1}
	if pn != nil {
		if f.Type.ElementType != nil || f.Type.KeyType != nil {
			l.cat = CatNone
			l.repeated = true
			l.col = firstLeafColumn(b.pq, path, pn)
		} else {
			if !pn.Leaf() {
				return nil, fmt.Errorf("column %s: parquet group where the table has %s", strings.Join(path, "."), f.Type)
			}
			l.col = firstLeafColumn(b.pq, path, pn)
			if err := l.bindPhysical(pn, f.Type); err != nil {
				return nil, fmt.Errorf("column %s: %w", strings.Join(path, "."), err)
			}
		}
	}
	n.leaf = len(b.c.leaves)
	n.minMax = l.cat != CatNone
	if l.col >= 0 {
		if b.c.slots[l.col] >= 0 {
			return nil, fmt.Errorf("column %s: parquet column %d mapped twice", strings.Join(path, "."), l.col)
		}
		b.c.slots[l.col] = int32(n.leaf)
	}
	b.c.leaves = append(b.c.leaves, l)
	return n, nil
}

// bindPhysical checks the parquet leaf against the table type and records
// how to read it.
func (l *leafStats) bindPhysical(pn parquet.Node, t *deltaschema.DataType) error {
	typ := pn.Type()
	kind := typ.Kind()
	lt := typ.LogicalType()
	switch l.cat {
	case catInt, catDate:
		if kind != parquet.Int32 && kind != parquet.Int64 {
			return fmt.Errorf("parquet type %s cannot hold %s", typ, t)
		}
	case catFloat:
		l.float32 = t.Name == "float"
		if kind != parquet.Float && kind != parquet.Double && kind != parquet.Int32 && kind != parquet.Int64 {
			return fmt.Errorf("parquet type %s cannot hold %s", typ, t)
		}
	case catTimestamp, catTimestampNTZ:
		switch kind {
		case parquet.Int96:
		case parquet.Int32:
			// date widened to timestamp_ntz: days since the epoch.
			if lt == nil || lt.Value == nil {
				return fmt.Errorf("parquet type %s cannot hold %s", typ, t)
			}
			if _, ok := lt.Value.(*format.DateType); !ok {
				return fmt.Errorf("parquet type %s cannot hold %s", typ, t)
			}
			l.tsMul = 86400_000_000
		case parquet.Int64:
			unit := time.Microsecond
			if lt != nil {
				if ts, ok := lt.Value.(*format.TimestampType); ok && ts.Unit.Value != nil {
					unit = ts.Unit.Value.Duration()
				}
			} else if ct := typ.ConvertedType(); ct != nil && *ct == deprecated.TimestampMillis {
				unit = time.Millisecond
			}
			switch unit {
			case time.Millisecond:
				l.tsMul = 1000
			case time.Nanosecond:
				l.tsDiv = 1000
			}
		default:
			return fmt.Errorf("parquet type %s cannot hold %s", typ, t)
		}
	case catString:
		if kind != parquet.ByteArray {
			return fmt.Errorf("parquet type %s cannot hold %s", typ, t)
		}
	case catDecimal:
		// The physical scale interprets the stored value (a file written
		// before a widening keeps its narrower scale, or a plain integer).
		l.scale = 0
		if lt != nil {
			if d, ok := lt.Value.(*format.DecimalType); ok {
				l.scale = int(d.Scale)
			}
		} else if ct := typ.ConvertedType(); ct != nil && *ct == deprecated.Decimal {
			l.scale = t.Scale
		}
		switch kind {
		case parquet.Int32, parquet.Int64:
		case parquet.ByteArray, parquet.FixedLenByteArray:
			l.decBytes = true
		default:
			return fmt.Errorf("parquet type %s cannot hold %s", typ, t)
		}
	}
	return nil
}

func CategoryOf(t *deltaschema.DataType) statCat {
	switch {
	case t.Struct != nil, t.ElementType != nil, t.KeyType != nil:
		return CatNone
	case strings.HasPrefix(t.Name, "decimal"):
		return catDecimal
	}
	switch t.Name {
	case "byte", "short", "integer", "long":
		return catInt
	case "float", "double":
		return catFloat
	case "date":
		return catDate
	case "timestamp":
		return catTimestamp
	case "timestamp_ntz":
		return catTimestampNTZ
	case "string":
		return catString
	}
	return CatNone
}
