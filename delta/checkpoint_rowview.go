package delta

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/big"
	"time"
	"unsafe"

	deltaactions "github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/stats"
	"github.com/compactord/compactord/delta/statscollect"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// pqNode is a compiled parquet schema node.
type pqNode struct {
	name     string
	def      int // definition level at which this node is non-null
	leaf     bool
	col      int // leaf column index
	typ      parquet.Type
	fields   []*pqNode // struct children
	repeated *pqNode   // list/map: the repeated child
	isMap    bool      // repeated child is key_value{key, value}
	elem     *pqNode   // list element (leaf) or map value
	key      *pqNode   // map key (leaf)
	first    int       // column index of the first leaf below this node
	skip     bool      // a nested shape this reader does not assemble
}

// compileNode builds the pqNode tree of node n at path; leaf column
// indexes come from the file schema.
func compileNode(schema *parquet.Schema, path []string, n parquet.Node, parentDef int) (*pqNode, error) {
	name := ""
	if len(path) > 0 {
		name = path[len(path)-1]
	}
	p := &pqNode{name: name, def: parentDef, first: -1}
	if n.Optional() || n.Repeated() {
		p.def++
	}
	if n.Leaf() {
		lc, ok := schema.Lookup(path...)
		if !ok {
			return nil, fmt.Errorf("column %v not in the file schema", path)
		}
		p.leaf, p.col, p.typ, p.first = true, lc.ColumnIndex, n.Type(), lc.ColumnIndex
		return p, nil
	}
	child := func(f parquet.Field, def int) (*pqNode, error) {
		c, err := compileNode(schema, append(append([]string(nil), path...), f.Name()), f, def)
		if err != nil {
			return nil, err
		}
		if p.first < 0 || c.first < p.first {
			p.first = c.first
		}
		return c, nil
	}
	fields := n.Fields()
	if len(fields) == 1 && fields[0].Repeated() && !n.Repeated() {
		// LIST or MAP: optional group { repeated ... }.
		r, err := child(fields[0], p.def)
		if err != nil {
			return nil, err
		}
		p.repeated = r
		switch {
		case r.leaf: // two-level list of primitives
			p.elem = r
		case len(r.fields) == 2 && r.fields[0].leaf && r.fields[1].leaf && r.fields[0].name == "key":
			p.isMap, p.key, p.elem = true, r.fields[0], r.fields[1]
			r.skip = false
		case len(r.fields) == 1 && r.fields[0].leaf:
			p.elem = r.fields[0]
			r.skip = false
		default:
			p.skip = true // nested repetition: not assembled
		}
		return p, nil
	}
	if n.Repeated() {
		// A repeated group outside the LIST/MAP shapes is not assembled.
		p.skip = true
	}
	for _, f := range fields {
		c, err := child(f, p.def)
		if err != nil {
			return nil, err
		}
		p.fields = append(p.fields, c)
	}
	if p.first < 0 {
		p.skip = true // empty group
	}
	return p, nil
}

// rowView gives access to the values of one row by leaf column.
type rowView struct {
	row    parquet.Row
	starts []int // row[starts[2c]:starts[2c+1]] are the values of column c
	// cols, when set (read column-wise: readColumnRange), holds the
	// values of column c in cols[c] instead of row and starts.
	cols [][]parquet.Value
	// strs interns short map keys and values (partition values, tag
	// names), which repeat across the many files of a checkpoint.
	strs map[string]string
	// pvMaps and tagMaps intern whole partitionValues and tags maps by
	// their encoded entries (entryKey): a checkpoint's files share a few
	// partitions and often their tags, and a small map costs a few hundred
	// bytes. Snapshot files are read-only, so sharing is safe.
	pvMaps  map[string]map[string]*string
	tagMaps map[string]map[string]string
	key     []byte
	// paths and stats hold the copies of the files' paths and stats
	// strings, apart: a slim snapshot replaces every stats string, and
	// then the stats blocks are freed while the paths are kept.
	paths, stats textArena
	// adds is the unused tail of a block of Adds (newAdd).
	adds []deltaactions.Add
	// shape is the shape of the last stats string the quick check read
	// (checkStats); spare is where the next is recorded.
	shape, spare stats.StatsShape
}

// checkStats is checkAddStats for a file of a checkpoint: a stats string
// of the shape of the last one is checked by matching it, one of
// another shape by the quick check (which records its shape), and what
// neither decides by the full scan, whose error names the file.
func (r *rowView) checkStats(a *deltaactions.Add) error {
	if a.Stats == "" || a.ParsedStats != nil {
		return checkAddStats(a)
	}
	if r.shape.Text != "" {
		if n, has, ok := r.shape.Match(a.Stats); ok {
			return checkRowCounts(a, n, has)
		}
	}
	if n, has, ok := stats.QuickScanShape(a.Stats, &r.spare); ok {
		r.shape, r.spare = r.spare, r.shape
		return checkRowCounts(a, n, has)
	}
	return checkAddStats(a)
}

// addBlock is how many Adds newAdd allocates at once: a block lives while
// any of its files does, as a text block does.
const addBlock = 256

// newAdd returns a zero Add from r's current block of them: one
// allocation per addBlock files of a checkpoint instead of one per file.
func (r *rowView) newAdd() *deltaactions.Add {
	if len(r.adds) == 0 {
		r.adds = make([]deltaactions.Add, addBlock)
	}
	a := &r.adds[0]
	r.adds = r.adds[1:]
	return a
}

// textArena copies strings into large blocks: one allocation per block
// instead of one per string (two million strings for a checkpoint of a
// million files). A block's bytes are never written again once a string
// holds them: later strings are appended past them, and a full block is
// left to the strings that point into it.
type textArena struct {
	block []byte
}

// arenaBlock is the size of a textArena block; longer strings are copied
// alone.
const arenaBlock = 64 << 10

// string returns a string holding a copy of b.
func (a *textArena) string(b []byte) string {
	if len(b) == 0 || len(b) > arenaBlock/16 {
		return string(b)
	}
	if cap(a.block)-len(a.block) < len(b) {
		a.block = make([]byte, 0, arenaBlock)
	}
	start := len(a.block)
	a.block = append(a.block, b...)
	return unsafe.String(&a.block[start], len(b))
}

// maxInternedMaps bounds each map cache of a rowView (one chunk of rows);
// maps past it are built per row.
const maxInternedMaps = 1 << 12

// entryKey encodes a map's entries (in row order, a null value apart from
// an empty one) into r.key: equal keys build equal maps.
func (r *rowView) entryKey(n *pqNode, keys, vals []parquet.Value) []byte {
	b := r.key[:0]
	for i, k := range keys {
		kb := k.ByteArray()
		b = binary.AppendUvarint(b, uint64(len(kb)))
		b = append(b, kb...)
		if vals[i].DefinitionLevel() < n.elem.def {
			b = append(b, 0)
			continue
		}
		vb := vals[i].ByteArray()
		b = append(b, 1)
		b = binary.AppendUvarint(b, uint64(len(vb)))
		b = append(b, vb...)
	}
	r.key = b
	return b
}

// intern returns b as a string, shared with earlier equal short strings.
func (r *rowView) intern(b []byte) string {
	if s, ok := r.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(b) <= 64 && len(r.strs) < 1<<12 {
		if r.strs == nil {
			r.strs = map[string]string{}
		}
		r.strs[s] = s
	}
	return s
}

func (r *rowView) index(row parquet.Row, ncols int) error {
	r.row = row
	if cap(r.starts) < 2*ncols {
		r.starts = make([]int, 2*ncols)
	}
	r.starts = r.starts[:2*ncols]
	for i := range r.starts {
		r.starts[i] = -1
	}
	prev := -1
	for i, v := range row {
		col := v.Column()
		if col < 0 || col >= ncols {
			return fmt.Errorf("row value for unknown column %d", col)
		}
		if col != prev {
			if r.starts[2*col] >= 0 {
				return fmt.Errorf("values of column %d are not contiguous in the row", col)
			}
			r.starts[2*col] = i
			prev = col
		}
		r.starts[2*col+1] = i + 1
	}
	for c := 0; c < ncols; c++ {
		if r.starts[2*c] < 0 {
			return fmt.Errorf("row has no value for column %d", c)
		}
	}
	return nil
}

func (r *rowView) values(col int) []parquet.Value {
	if r.cols != nil {
		return r.cols[col]
	}
	return r.row[r.starts[2*col]:r.starts[2*col+1]]
}

// present reports whether node n is non-null in this row (outside any
// repetition).
func (r *rowView) present(n *pqNode) bool {
	return r.values(n.first)[0].DefinitionLevel() >= n.def
}

// assemble returns node n's value in this row, nil when null.
func (r *rowView) assemble(n *pqNode) (any, error) {
	switch {
	case n.skip:
		return nil, nil
	case n.leaf:
		v := r.values(n.col)[0]
		if v.DefinitionLevel() < n.def {
			return nil, nil
		}
		return leafValue(n, v)
	case n.repeated != nil:
		if n.repeated.skip {
			return nil, nil
		}
		return r.assembleRepeated(n)
	}
	if !r.present(n) {
		return nil, nil
	}
	m := make(map[string]any, len(n.fields))
	for _, f := range n.fields {
		v, err := r.assemble(f)
		if err != nil {
			return nil, fmt.Errorf("%s.%w", n.name, err)
		}
		if v != nil {
			m[f.name] = v
		}
	}
	return m, nil
}

func (r *rowView) assembleRepeated(n *pqNode) (any, error) {
	if n.isMap {
		return r.assembleMap(n)
	}
	vals := r.values(n.elem.col)
	if vals[0].DefinitionLevel() < n.def {
		return nil, nil
	}
	out := make([]any, 0, len(vals))
	if vals[0].DefinitionLevel() < n.repeated.def {
		return out, nil
	}
	for _, v := range vals {
		var e any
		if v.DefinitionLevel() >= n.elem.def {
			var err error
			if e, err = leafValue(n.elem, v); err != nil {
				return nil, fmt.Errorf("%s: %w", n.name, err)
			}
		}
		out = append(out, e)
	}
	return out, nil
}

func (r *rowView) assembleMap(n *pqNode) (any, error) {
	keys, vals, null, err := r.mapEntries(n)
	if err != nil || null {
		return nil, err
	}
	out := make(map[string]any, len(keys))
	for i, kv := range keys {
		k, err := leafValue(n.key, kv)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.name, err)
		}
		var e any
		if vals[i].DefinitionLevel() >= n.elem.def {
			if e, err = leafValue(n.elem, vals[i]); err != nil {
				return nil, fmt.Errorf("%s: %w", n.name, err)
			}
		}
		out[fmt.Sprint(k)] = e
	}
	return out, nil
}

// mapEntries returns the key and value leaves of a map column's entries in
// this row; null is true when the map itself is null. An empty map has no
// entries.
func (r *rowView) mapEntries(n *pqNode) (keys, vals []parquet.Value, null bool, err error) {
	keys = r.values(n.key.col)
	if keys[0].DefinitionLevel() < n.def {
		return nil, nil, true, nil
	}
	if keys[0].DefinitionLevel() < n.repeated.def {
		return nil, nil, false, nil
	}
	vals = r.values(n.elem.col)
	if len(vals) != len(keys) {
		return nil, nil, false, fmt.Errorf("%s: %d map keys but %d values", n.name, len(keys), len(vals))
	}
	return keys, vals, false, nil
}

// leafValue converts a non-null leaf value. Dates become "yyyy-MM-dd",
// timestamps ISO-8601 with milliseconds ("...Z" when adjusted to UTC, no
// zone otherwise), decimals json.Number; other numbers int64/float64.
func leafValue(n *pqNode, v parquet.Value) (any, error) {
	lt := n.typ.LogicalType()
	ct := n.typ.ConvertedType()
	switch v.Kind() {
	case parquet.Boolean:
		return v.Boolean(), nil
	case parquet.Int32, parquet.Int64:
		i := v.Int64()
		if v.Kind() == parquet.Int32 {
			i = int64(v.Int32())
		}
		if lt != nil {
			switch t := lt.Value.(type) {
			case *format.DateType:
				return time.Unix(i*86400, 0).UTC().Format("2006-01-02"), nil
			case *format.TimestampType:
				return formatTimestamp(i, t.Unit.Value, t.IsAdjustedToUTC), nil
			case *format.DecimalType:
				return decimalNumber(big.NewInt(i), int(t.Scale)), nil
			}
		}
		if ct != nil {
			switch *ct {
			case 6 /* DATE */ :
				return time.Unix(i*86400, 0).UTC().Format("2006-01-02"), nil
			case 9 /* TIMESTAMP_MILLIS */ :
				return formatTimestamp(i, &format.MilliSeconds{}, true), nil
			case 10 /* TIMESTAMP_MICROS */ :
				return formatTimestamp(i, &format.MicroSeconds{}, true), nil
			}
		}
		return i, nil
	case parquet.Int96:
		x := v.Int96()
		nanos := int64(uint64(x[1])<<32 | uint64(x[0]))
		days := int64(x[2]) - 2440588
		return time.Unix(days*86400, nanos).UTC().Format("2006-01-02T15:04:05.000Z07:00"), nil
	case parquet.Float:
		return float64(v.Float()), nil
	case parquet.Double:
		return v.Double(), nil
	case parquet.ByteArray, parquet.FixedLenByteArray:
		b := v.ByteArray()
		if lt != nil {
			if t, ok := lt.Value.(*format.DecimalType); ok {
				return decimalNumber(statscollect.TwosComplementInt(b), int(t.Scale)), nil
			}
		}
		return string(b), nil
	}
	return nil, fmt.Errorf("%s: unsupported parquet kind %v", n.name, v.Kind())
}

func formatTimestamp(i int64, unit format.TimeUnitValue, utc bool) any {
	var t time.Time
	switch unit.(type) {
	case *format.MilliSeconds:
		t = time.UnixMilli(i)
	case *format.NanoSeconds:
		t = time.Unix(0, i)
	default:
		t = time.UnixMicro(i)
	}
	if utc {
		return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	return t.UTC().Format("2006-01-02T15:04:05.000")
}

// decimalNumber renders unscaled * 10^-scale as a JSON number (the stats
// formatter's rendering, appendDecimal).
func decimalNumber(unscaled *big.Int, scale int) json.Number {
	return json.Number(statscollect.AppendDecimal(nil, unscaled, scale))
}

func (r *rowView) leaf(n *pqNode) (parquet.Value, bool) {
	if n == nil || !n.leaf {
		return parquet.Value{}, false
	}
	v := r.values(n.col)[0]
	return v, v.DefinitionLevel() >= n.def
}

func (r *rowView) str(n *pqNode) (string, bool, error) {
	return r.strIn(n, nil)
}

// strIn is str copying the string into a (when not nil).
func (r *rowView) strIn(n *pqNode, a *textArena) (string, bool, error) {
	v, ok := r.leaf(n)
	if !ok {
		return "", false, nil
	}
	if k := v.Kind(); k != parquet.ByteArray && k != parquet.FixedLenByteArray {
		return "", false, fmt.Errorf("%s: want a string column, got %v", n.name, k)
	}
	if a != nil {
		return a.string(v.ByteArray()), true, nil
	}
	return string(v.ByteArray()), true, nil
}

func (r *rowView) int64(n *pqNode) (*int64, error) {
	i, ok, err := r.int64v(n)
	if !ok || err != nil {
		return nil, err
	}
	return ptrTo(i), nil
}

// ptrTo returns a pointer to a copy of v. Taking the address of a local
// moves it to the heap where it is declared, on every path: a null field
// of a million rows would cost a million allocations.
func ptrTo[T any](v T) *T {
	p := new(T)
	*p = v
	return p
}

// int64v is int64 without a pointer (one allocation fewer per field of
// a million files).
func (r *rowView) int64v(n *pqNode) (int64, bool, error) {
	v, ok := r.leaf(n)
	if !ok {
		return 0, false, nil
	}
	i, ok := statscollect.IntegerValue(v)
	if !ok {
		return 0, false, fmt.Errorf("%s: want an integer column, got %v", n.name, v.Kind())
	}
	return i, true, nil
}

func (r *rowView) bool(n *pqNode) (*bool, error) {
	b, ok, err := r.boolv(n)
	if !ok || err != nil {
		return nil, err
	}
	return ptrTo(b), nil
}

// boolv is bool without a pointer.
func (r *rowView) boolv(n *pqNode) (bool, bool, error) {
	v, ok := r.leaf(n)
	if !ok {
		return false, false, nil
	}
	if v.Kind() != parquet.Boolean {
		return false, false, fmt.Errorf("%s: want a boolean column, got %v", n.name, v.Kind())
	}
	return v.Boolean(), true, nil
}

// stringMap reads a MAP<string,string> column; nil when null. Equal maps
// of one chunk are one map.
func (r *rowView) stringMap(n *pqNode) (map[string]*string, error) {
	return internedMap(r, n, &r.pvMaps, func(m map[string]*string, k string, v []byte, null bool) {
		if null {
			m[k] = nil
			return
		}
		s := r.intern(v)
		m[k] = &s
	})
}

// tagMap reads a tags MAP<string,string> column (null values dropped);
// nil when null. Equal maps of one chunk are one map.
func (r *rowView) tagMap(n *pqNode) (map[string]string, error) {
	return internedMap(r, n, &r.tagMaps, func(m map[string]string, k string, v []byte, null bool) {
		if !null {
			m[k] = r.intern(v)
		}
	})
}

// internedMap reads a MAP<string,string> column into a map that put fills
// entry by entry, or returns the map of an earlier row of this chunk with
// the same entries (cache); nil when null.
func internedMap[V any](r *rowView, n *pqNode, cache *map[string]map[string]V, put func(m map[string]V, k string, v []byte, null bool)) (map[string]V, error) {
	if n == nil || !n.isMap {
		if n != nil {
			return nil, fmt.Errorf("%s: want a map column", n.name)
		}
		return nil, nil
	}
	keys, vals, null, err := r.mapEntries(n)
	if err != nil || null {
		return nil, err
	}
	id := r.entryKey(n, keys, vals)
	if m, ok := (*cache)[string(id)]; ok {
		return m, nil
	}
	out := make(map[string]V, len(keys))
	for i, k := range keys {
		put(out, r.intern(k.ByteArray()), vals[i].ByteArray(), vals[i].DefinitionLevel() < n.elem.def)
	}
	if len(*cache) < maxInternedMaps {
		if *cache == nil {
			*cache = map[string]map[string]V{}
		}
		(*cache)[string(id)] = out
	}
	return out, nil
}
