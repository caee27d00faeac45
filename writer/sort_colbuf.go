package writer

import (
	"fmt"
	"math"
	"slices"

	deltascan "github.com/compactord/compactord/delta/scan"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
)

// colBuf holds one flat (not repeated) data-schema column of every live row
// of a sorted job, in read order, compactly: a definition level per row
// (when the column has levels), and the value as 8 bytes of bits for the
// 8-byte kinds and booleans, 4 for the 4-byte kinds, or as offsets into one
// byte slice for byte arrays. The gather builds parquet values from it in
// any order.
type colBuf struct {
	col    int
	kind   parquet.Kind
	maxDef int
	defs   []byte   // per row, nil when maxDef is 0
	bits   []uint64 // 8-byte kinds and booleans
	words  []uint32 // 4-byte kinds (int32, float): half the memory the gather reads
	offs   []uint32 // byte arrays: row i is data[offs[i]:offs[i+1]]
	data   []byte
	// dict is the dictionary of the pages appendPage last took, its
	// values decoded once into dictBits (fixed-width kinds) or dictData
	// and dictOffs; nil between row groups.
	dict     parquet.Dictionary
	dictBits []uint64
	dictData []byte
	dictOffs []uint32
	pageBits []uint64 // a plain page's values, when some rows are null
	rowBits  []uint64 // the bits of the rows being appended
}

func newColBuf(col int, kind parquet.Kind, maxDef int, rows int) *colBuf {
	b := &colBuf{col: col, kind: kind, maxDef: maxDef}
	if maxDef > 0 {
		b.defs = make([]byte, 0, rows)
	}
	switch {
	case b.byteArrays():
		b.offs = make([]uint32, 1, rows+1)
	case b.narrow():
		b.words = make([]uint32, 0, rows)
	default:
		b.bits = make([]uint64, 0, rows)
	}
	return b
}

// narrow reports whether the values are 4 bytes (in words).
func (b *colBuf) narrow() bool { return b.kind == parquet.Int32 || b.kind == parquet.Float }

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
	if b.narrow() {
		return len(b.words)
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
	xs := b.rowBits[:0]
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
		xs = append(xs, x)
	}
	b.rowBits = xs
	b.appendFixed(xs)
	return nil
}

// appendFixed adds rows of a fixed-width column given as bits: to words
// for the 4-byte kinds, else to bits.
func (b *colBuf) appendFixed(xs []uint64) {
	if !b.narrow() {
		b.bits = append(b.bits, xs...)
		return
	}
	words := slices.Grow(b.words, len(xs))
	for _, x := range xs {
		words = append(words, uint32(x))
	}
	b.words = words
}

// appendPage adds the rows of a page of the column as the file holds it
// (the table's type and levels, flat) straight from its levels and
// encoded values, plain or dictionary indexes, with no parquet value per
// row; a null row's bits are zero, its bytes empty. Not for booleans.
func (b *colBuf) appendPage(p parquet.Page) error {
	if k := p.Type().Kind(); k != b.kind || k == parquet.Boolean {
		return fmt.Errorf("sort: column %d: page of kind %v in a column of kind %v", b.col, k, b.kind)
	}
	if len(p.RepetitionLevels()) != 0 {
		return fmt.Errorf("sort: column %d: repeated value in a flat column", b.col)
	}
	n := int(p.NumRows())
	defs := p.DefinitionLevels()
	if b.maxDef > 0 && len(defs) != n {
		return fmt.Errorf("sort: column %d: %d definition levels for %d rows", b.col, len(defs), n)
	}
	present := n
	if b.maxDef > 0 {
		present = 0
		for _, d := range defs {
			if int(d) > b.maxDef {
				return fmt.Errorf("sort: column %d: definition level %d above the maximum %d", b.col, d, b.maxDef)
			}
			if int(d) == b.maxDef {
				present++
			}
		}
		b.defs = append(b.defs, defs...)
	}
	data := p.Data()
	var idx []int32
	if d := p.Dictionary(); d != nil {
		if d != b.dict {
			b.setDict(d)
		}
		idx = data.Int32()
		if len(idx) != present {
			return fmt.Errorf("sort: column %d: %d dictionary indexes for %d values", b.col, len(idx), present)
		}
		size := int32(b.dict.Len())
		for _, i := range idx {
			if i < 0 || i >= size {
				return fmt.Errorf("sort: column %d: dictionary index %d out of %d values", b.col, i, size)
			}
		}
	}
	if b.byteArrays() {
		return b.appendBytePage(defs, n, present, idx, data)
	}
	narrow := b.narrow()
	if idx == nil && present == n && narrow {
		// Every row present, plain: the values are the rows.
		had := len(b.words)
		b.words = fixedWords(b.kind, data, slices.Grow(b.words, n))
		if len(b.words)-had != n {
			return fmt.Errorf("sort: column %d: %d values for %d rows", b.col, len(b.words)-had, n)
		}
		return nil
	}
	if idx == nil && present == n {
		had := len(b.bits)
		b.bits = fixedBits(b.kind, data, slices.Grow(b.bits, n))
		if len(b.bits)-had != n {
			return fmt.Errorf("sort: column %d: %d values for %d rows", b.col, len(b.bits)-had, n)
		}
		return nil
	}
	vals := b.dictBits // dictionary indexes: the dictionary's values
	if idx == nil {
		vals = fixedBits(b.kind, data, b.pageBits[:0])
		b.pageBits = vals
		if len(vals) != present {
			return fmt.Errorf("sort: column %d: %d values for %d present rows", b.col, len(vals), present)
		}
	}
	xs := slices.Grow(b.rowBits[:0], n)
	j := 0
	for r := range n {
		var x uint64
		if b.maxDef == 0 || int(defs[r]) == b.maxDef {
			if idx != nil {
				x = vals[idx[j]]
			} else {
				x = vals[j]
			}
			j++
		}
		xs = append(xs, x)
	}
	b.rowBits = xs
	b.appendFixed(xs)
	return nil
}

// appendBytePage is appendPage for byte array columns.
func (b *colBuf) appendBytePage(defs []byte, n, present int, idx []int32, data encoding.Values) error {
	var vdata []byte
	var voffs []uint32
	size := 0 // fixed-length byte arrays: the size of every value
	switch {
	case idx != nil:
		vdata, voffs = b.dictData, b.dictOffs
	case b.kind == parquet.ByteArray:
		vdata, voffs = data.ByteArray()
		if len(voffs) != present+1 && !(present == 0 && len(voffs) == 0) {
			return fmt.Errorf("sort: column %d: %d byte array offsets for %d present rows", b.col, len(voffs), present)
		}
	default:
		vdata, size = data.FixedLenByteArray()
		if size <= 0 || len(vdata) != size*present {
			return fmt.Errorf("sort: column %d: %d bytes of fixed-length values of %d bytes for %d present rows", b.col, len(vdata), size, present)
		}
	}
	out, offs := b.data, slices.Grow(b.offs, n)
	j := 0
	for r := range n {
		if b.maxDef == 0 || int(defs[r]) == b.maxDef {
			k := j
			if idx != nil {
				k = int(idx[j])
			}
			if size > 0 {
				out = append(out, vdata[k*size:(k+1)*size]...)
			} else {
				out = append(out, vdata[voffs[k]:voffs[k+1]]...)
			}
			j++
		}
		offs = append(offs, uint32(len(out)))
	}
	b.data, b.offs = out, offs
	if len(out) > math.MaxUint32 {
		return fmt.Errorf("sort: column %d holds more than 4 GiB", b.col)
	}
	return nil
}

// setDict makes d the dictionary of the pages to come, its values decoded.
func (b *colBuf) setDict(d parquet.Dictionary) {
	b.dict = d
	data := d.Page().Data()
	switch b.kind {
	case parquet.ByteArray:
		b.dictData, b.dictOffs = data.ByteArray()
	case parquet.FixedLenByteArray:
		var size int
		b.dictData, size = data.FixedLenByteArray()
		b.dictOffs = make([]uint32, 0, d.Len()+1)
		for i := range d.Len() + 1 {
			b.dictOffs = append(b.dictOffs, uint32(i*size))
		}
	default:
		b.dictBits = fixedBits(b.kind, data, nil)
	}
}

// dropDict forgets the dictionary (its memory is the page reader's).
func (b *colBuf) dropDict() {
	b.dict, b.dictBits, b.dictData, b.dictOffs, b.pageBits, b.rowBits = nil, nil, nil, nil, nil, nil
}

// fixedWords appends the 4-byte values of data, a column of kind (int32 or
// float), to dst as colBuf words.
func fixedWords(kind parquet.Kind, data encoding.Values, dst []uint32) []uint32 {
	if kind == parquet.Float {
		for _, x := range data.Float() {
			dst = append(dst, math.Float32bits(x))
		}
		return dst
	}
	return append(dst, data.Uint32()...)
}

// fixedBits appends the fixed-width values of data, a column of kind, to
// dst as colBuf bits.
func fixedBits(kind parquet.Kind, data encoding.Values, dst []uint64) []uint64 {
	switch kind {
	case parquet.Int64:
		for _, x := range data.Int64() {
			dst = append(dst, uint64(x))
		}
	case parquet.Int32:
		for _, x := range data.Int32() {
			dst = append(dst, uint64(uint32(x)))
		}
	case parquet.Double:
		for _, x := range data.Double() {
			dst = append(dst, math.Float64bits(x))
		}
	case parquet.Float:
		for _, x := range data.Float() {
			dst = append(dst, uint64(math.Float32bits(x)))
		}
	}
	return dst
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
		v = parquet.Int32Value(int32(b.words[i]))
	case parquet.Int64:
		v = parquet.Int64Value(int64(b.bits[i]))
	case parquet.Float:
		v = parquet.FloatValue(math.Float32frombits(b.words[i]))
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
			dst[k] = parquet.Int64Value(int64(b.bits[e.Ref]))
		}
	case parquet.Int32:
		for k, e := range es {
			dst[k] = parquet.Int32Value(int32(b.words[e.Ref]))
		}
	case parquet.Double:
		for k, e := range es {
			dst[k] = parquet.DoubleValue(math.Float64frombits(b.bits[e.Ref]))
		}
	case parquet.Float:
		for k, e := range es {
			dst[k] = parquet.FloatValue(math.Float32frombits(b.words[e.Ref]))
		}
	case parquet.Boolean:
		for k, e := range es {
			dst[k] = parquet.BooleanValue(b.bits[e.Ref] != 0)
		}
	case parquet.ByteArray:
		for k, e := range es {
			lo, hi := b.offs[e.Ref], b.offs[e.Ref+1]
			dst[k] = parquet.ByteArrayValue(b.data[lo:hi:hi])
		}
	case parquet.FixedLenByteArray:
		for k, e := range es {
			lo, hi := b.offs[e.Ref], b.offs[e.Ref+1]
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
		if d := int(b.defs[e.Ref]); d < def {
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
		return float64(math.Float32frombits(b.words[i]))
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
		return int64(int32(b.words[i]))
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
			ok := false
			if kind != parquet.Boolean {
				var err error
				ok, err = s.scan.ReadColumnPages(rg, col, scratch, obs, b.appendPage)
				b.dropDict()
				if err != nil {
					return nil, fmt.Errorf("source %s: %w", s.src.Path, err)
				}
			}
			if ok {
				continue
			}
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
	b.dropDict()
	b.dropFullDefs()
	return b, nil
}
