package writer

import (
	"fmt"
	"math"
	"slices"

	deltascan "github.com/compactord/compactord/delta/scan"

	"github.com/parquet-go/parquet-go"
)

// colBuf holds one flat (not repeated) data-schema column of every live row
// of a sorted job, in read order, compactly: a definition level per row
// (when the column has levels), and the value as 8 bytes of bits for the
// fixed-width kinds or as offsets into one byte slice for byte arrays. The
// gather builds parquet values from it in any order.
type colBuf struct {
	col    int
	kind   parquet.Kind
	maxDef int
	defs   []byte   // per row, nil when maxDef is 0
	bits   []uint64 // fixed-width kinds
	offs   []uint32 // byte arrays: row i is data[offs[i]:offs[i+1]]
	data   []byte
}

func newColBuf(col int, kind parquet.Kind, maxDef int, rows int) *colBuf {
	b := &colBuf{col: col, kind: kind, maxDef: maxDef}
	if maxDef > 0 {
		b.defs = make([]byte, 0, rows)
	}
	if b.byteArrays() {
		b.offs = make([]uint32, 1, rows+1)
	} else {
		b.bits = make([]uint64, 0, rows)
	}
	return b
}

func (b *colBuf) byteArrays() bool {
	return b.kind == parquet.ByteArray || b.kind == parquet.FixedLenByteArray
}

// colBufKind reports whether a leaf of this kind fits a colBuf.
func colBufKind(k parquet.Kind) bool {
	switch k {
	case parquet.Boolean, parquet.Int32, parquet.Int64, parquet.Float, parquet.Double, parquet.ByteArray, parquet.FixedLenByteArray:
		return true
	}
	return false
}

// rows is the number of rows held.
func (b *colBuf) rows() int {
	if b.byteArrays() {
		return len(b.offs) - 1
	}
	return len(b.bits)
}

// append adds the values of consecutive rows (one value each): one loop
// per kind, checking each value as it is stored.
func (b *colBuf) append(vals []parquet.Value) error {
	kind, col := b.kind, b.col
	if b.defs != nil {
		defs := slices.Grow(b.defs, len(vals))
		for _, v := range vals {
			defs = append(defs, byte(v.DefinitionLevel()))
		}
		b.defs = defs
	}
	switch kind {
	case parquet.ByteArray, parquet.FixedLenByteArray:
		data, offs := b.data, slices.Grow(b.offs, len(vals))
		for _, v := range vals {
			if v.RepetitionLevel() != 0 || (!v.IsNull() && v.Kind() != kind) {
				return badValue(col, kind, v)
			}
			if !v.IsNull() {
				data = append(data, v.ByteArray()...)
			}
			offs = append(offs, uint32(len(data)))
		}
		b.data, b.offs = data, offs
		if len(data) > math.MaxUint32 {
			return fmt.Errorf("sort: column %d holds more than 4 GiB", col)
		}
		return nil
	}
	bits := slices.Grow(b.bits, len(vals))
	for _, v := range vals {
		if v.RepetitionLevel() != 0 || (!v.IsNull() && v.Kind() != kind) {
			return badValue(col, kind, v)
		}
		var x uint64
		switch {
		case v.IsNull():
		case kind == parquet.Int64:
			x = uint64(v.Int64())
		case kind == parquet.Double:
			x = math.Float64bits(v.Double())
		case kind == parquet.Int32:
			x = uint64(uint32(v.Int32()))
		case kind == parquet.Float:
			x = uint64(math.Float32bits(v.Float()))
		case kind == parquet.Boolean:
			if v.Boolean() {
				x = 1
			}
		}
		bits = append(bits, x)
	}
	b.bits = bits
	return nil
}

// badValue is the error of a value that does not belong in a flat column
// of kind.
func badValue(col int, kind parquet.Kind, v parquet.Value) error {
	if v.RepetitionLevel() != 0 {
		return fmt.Errorf("sort: column %d: repeated value in a flat column", col)
	}
	return fmt.Errorf("sort: column %d: value of kind %v in a column of kind %v", col, v.Kind(), kind)
}

// isNull reports whether row i is null.
func (b *colBuf) isNull(i int) bool {
	if b.defs == nil {
		return false
	}
	return int(b.defs[i]) < b.maxDef
}

// value is row i as a parquet value of the column (levels set); byte
// arrays reference the buffer.
func (b *colBuf) value(i int) parquet.Value {
	def := b.maxDef
	if b.defs != nil {
		def = int(b.defs[i])
	}
	if def < b.maxDef {
		return parquet.Value{}.Level(0, def, b.col)
	}
	var v parquet.Value
	switch b.kind {
	case parquet.Boolean:
		v = parquet.BooleanValue(b.bits[i] != 0)
	case parquet.Int32:
		v = parquet.Int32Value(int32(uint32(b.bits[i])))
	case parquet.Int64:
		v = parquet.Int64Value(int64(b.bits[i]))
	case parquet.Float:
		v = parquet.FloatValue(math.Float32frombits(uint32(b.bits[i])))
	case parquet.Double:
		v = parquet.DoubleValue(math.Float64frombits(b.bits[i]))
	case parquet.ByteArray:
		lo, hi := b.offs[i], b.offs[i+1]
		v = parquet.ByteArrayValue(b.data[lo:hi:hi])
	case parquet.FixedLenByteArray:
		lo, hi := b.offs[i], b.offs[i+1]
		v = parquet.FixedLenByteArrayValue(b.data[lo:hi:hi])
	}
	return v.Level(0, def, b.col)
}

// gather sets dst[k] to the value of row es[k].ref: the values built in one
// loop per kind (a null row's bits are zero, its bytes empty), then their
// levels set in place, nulls made null.
func (b *colBuf) gather(dst []parquet.Value, es []sortEntry) {
	dst = dst[:len(es)]
	switch b.kind {
	case parquet.Int64:
		for k, e := range es {
			dst[k] = parquet.Int64Value(int64(b.bits[e.ref]))
		}
	case parquet.Int32:
		for k, e := range es {
			dst[k] = parquet.Int32Value(int32(uint32(b.bits[e.ref])))
		}
	case parquet.Double:
		for k, e := range es {
			dst[k] = parquet.DoubleValue(math.Float64frombits(b.bits[e.ref]))
		}
	case parquet.Float:
		for k, e := range es {
			dst[k] = parquet.FloatValue(math.Float32frombits(uint32(b.bits[e.ref])))
		}
	case parquet.Boolean:
		for k, e := range es {
			dst[k] = parquet.BooleanValue(b.bits[e.ref] != 0)
		}
	case parquet.ByteArray:
		for k, e := range es {
			lo, hi := b.offs[e.ref], b.offs[e.ref+1]
			dst[k] = parquet.ByteArrayValue(b.data[lo:hi:hi])
		}
	case parquet.FixedLenByteArray:
		for k, e := range es {
			lo, hi := b.offs[e.ref], b.offs[e.ref+1]
			dst[k] = parquet.FixedLenByteArrayValue(b.data[lo:hi:hi])
		}
	}
	def, col := b.maxDef, b.col
	if b.defs == nil {
		for k := range dst {
			dst[k].SetDefinitionLevel(def)
			dst[k].SetColumnIndex(col)
		}
		return
	}
	for k, e := range es {
		if d := int(b.defs[e.ref]); d < def {
			dst[k] = parquet.Value{}
			dst[k].SetDefinitionLevel(d)
		} else {
			dst[k].SetDefinitionLevel(def)
		}
		dst[k].SetColumnIndex(col)
	}
}

// float64At is row i of a non-null float or double column as a float64.
func (b *colBuf) float64At(i int) float64 {
	if b.kind == parquet.Float {
		return float64(math.Float32frombits(uint32(b.bits[i])))
	}
	return math.Float64frombits(b.bits[i])
}

// dropFullDefs forgets the definition levels when every row has the
// maximum one (no nulls): one memory access less per gathered value.
func (b *colBuf) dropFullDefs() {
	for _, d := range b.defs {
		if int(d) != b.maxDef {
			return
		}
	}
	b.defs = nil
}

// int64At is row i of a non-null signed integer column as an int64.
func (b *colBuf) int64At(i int) int64 {
	if b.kind == parquet.Int32 {
		return int64(int32(uint32(b.bits[i])))
	}
	return int64(b.bits[i])
}

// readColBuf reads column col of every source into a new colBuf, in read
// order.
// obs, when not nil, observes every value read.
func readColBuf(srcs []*sortedSource, col int, kind parquet.Kind, maxDef int, rows int, scratch *deltascan.ColumnScratch, obs deltascan.ColumnObserver) (*colBuf, error) {
	b := newColBuf(col, kind, maxDef, rows)
	for i, s := range srcs {
		for rg := range s.scan.NumRowGroups() {
			if err := s.scan.ReadColumn(rg, col, scratch, obs, b.append); err != nil {
				return nil, fmt.Errorf("source %s: %w", s.src.Path, err)
			}
		}
		if i == 0 && b.byteArrays() && b.rows() > 0 && len(srcs) > 1 {
			// Room for every row's bytes at the first source's bytes
			// per row (and an eighth more), instead of growing by
			// copies.
			per := float64(len(b.data)) / float64(b.rows())
			b.data = slices.Grow(b.data, int(per*float64(rows-b.rows())*9/8))
		}
		if b.rows() != int(s.start+s.live) {
			return nil, corruptSource(s.src, fmt.Errorf("%w: column %d: read %d live values, want %d", ErrLiveRowMismatch, col, b.rows()-int(s.start), s.live))
		}
	}
	b.dropFullDefs()
	return b, nil
}
