package delta

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"runtime"
	"strconv"
	"sync"
	"time"
	"unsafe"

	deltaactions "github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/pq"
	"github.com/compactord/compactord/delta/stats"
	"github.com/compactord/compactord/delta/statscollect"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// Checkpoint parquet files are read generically: each row's values are
// assembled into plain Go values (map[string]any for structs and maps,
// []any for lists, int64/float64/bool/string for primitives; dates,
// timestamps and decimals already rendered the way JSON stats write them),
// then converted to typed actions. This handles any checkpoint schema
// (Spark's, delta-rs's, kernel's; typed stats_parsed and
// partitionValues_parsed of any table schema) without reflection.

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
	if r.shape.S != "" {
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

// cpActions are the actions of a checkpoint or sidecar file: its file
// actions (add, remove) in file order, and the others. A million file
// actions are two pointers each, not a million Action values.
type cpActions struct {
	files  []fileEntry
	others []deltaactions.Action
}

// take appends a to its list.
func (c *cpActions) take(a deltaactions.Action) {
	switch {
	case a.Add != nil:
		c.files = append(c.files, fileEntry{add: a.Add})
	case a.Remove != nil:
		c.files = append(c.files, fileEntry{rm: a.Remove})
	default:
		c.others = append(c.others, a)
	}
}

// actions returns every action as an Action: the others, then the file
// actions (a checkpoint's actions are a state, in no order).
func (c cpActions) actions() []deltaactions.Action {
	out := make([]deltaactions.Action, 0, len(c.others)+len(c.files))
	out = append(out, c.others...)
	for _, f := range c.files {
		out = append(out, deltaactions.Action{Add: f.add, Remove: f.rm})
	}
	return out
}

// parseCheckpointParquet reads every action row of a checkpoint or sidecar
// parquet file. Large row groups are split into row ranges read
// concurrently (one checkpoint file usually holds a single row group).
func parseCheckpointParquet(data []byte) (cpActions, error) {
	return parseCheckpointChunks(data, 32<<10)
}

// parseCheckpointChunks is parseCheckpointParquet with chunks of at most
// chunkRows rows.
func parseCheckpointChunks(data []byte, chunkRows int64) (cpActions, error) {
	return parseCheckpointChunksBy(data, chunkRows, true)
}

// parseCheckpointChunksBy is parseCheckpointChunks reading chunks of file
// actions column-wise (readColumnRange) when columns is set, else every
// chunk row by row.
func parseCheckpointChunksBy(data []byte, chunkRows int64, columns bool) (_ cpActions, err error) {
	// parquet-go may panic on malformed input; turn it into an error.
	defer pq.RecoverParquet(&err)
	if err := checkParquetFrame(data); err != nil {
		return cpActions{}, err
	}
	if err := checkFooter(data); err != nil {
		return cpActions{}, err
	}
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return cpActions{}, fmt.Errorf("open parquet: %w", err)
	}
	if err := checkPageHeaders(data, f.Metadata()); err != nil {
		return cpActions{}, err
	}
	root, err := compileNode(f.Schema(), nil, f.Schema(), 0)
	if err != nil {
		return cpActions{}, err
	}
	cs := compileCheckpoint(root)
	cs.ncols = len(f.Schema().Columns())
	if columns {
		cs.columns = cs.planColumns(f.Schema())
	}
	// A part of a multi-part checkpoint may hold a single kind of action
	// (delta-kernel-rs writes parts of txn alone); protocol and metaData
	// are checked on the whole checkpoint.
	if cs.add == nil && cs.remove == nil && cs.tops[deltaactions.KindMetadata] == nil && cs.tops[deltaactions.KindProtocol] == nil &&
		cs.tops[deltaactions.KindSidecar] == nil && cs.tops[deltaactions.KindTxn] == nil && cs.tops[deltaactions.KindDomainMetadata] == nil && cs.tops[deltaactions.KindCheckpointMetadata] == nil {
		return cpActions{}, errors.New("not a checkpoint: no add, remove, metaData, protocol, txn, domainMetadata, checkpointMetadata or sidecar column")
	}
	type chunk struct {
		rg         int
		start, end int64
		at         int64 // index of the chunk's first row in the file
	}
	var chunks []chunk
	// Real checkpoints spend several bytes per row; a footer claiming far
	// more rows than the file could hold is corrupt (and would make us
	// plan billions of chunks).
	maxRows := 64*int64(len(data)) + 1024
	var rowsBefore int64
	for gi, rg := range f.RowGroups() {
		n := rg.NumRows()
		if n < 0 || n > maxRows {
			return cpActions{}, fmt.Errorf("corrupt parquet: row group %d claims %d rows in a %d-byte file", gi, n, len(data))
		}
		maxRows -= n
		for lo := int64(0); lo < n; lo += chunkRows {
			chunks = append(chunks, chunk{gi, lo, min(lo+chunkRows, n), rowsBefore + lo})
		}
		rowsBefore += n
	}
	// Chunks decode their file actions into their own rows of one slice,
	// which is then compacted in place (a row may hold no action): no
	// second copy of a million entries.
	all := make([]fileEntry, rowsBefore)
	out := make([]cpActions, len(chunks))
	errs := make([]error, len(chunks))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	for i, c := range chunks {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer pq.RecoverParquet(&errs[i])
			rg, sink := f.RowGroups()[c.rg], cpActions{files: all[c.at : c.at : c.at+c.end-c.start]}
			done := false
			if cs.columns != nil {
				out[i], done, errs[i] = readColumnRange(rg, c.start, c.end, cs, sink)
			}
			if errs[i] == nil && !done {
				out[i], errs[i] = readRowRange(rg, c.start, c.end, cs, sink)
			}
			if errs[i] != nil {
				errs[i] = fmt.Errorf("row group %d: %w", c.rg, errs[i])
			}
		}()
	}
	wg.Wait()
	for i := range out {
		if errs[i] != nil {
			return cpActions{}, errs[i]
		}
	}
	var acts cpActions
	n := 0
	for _, o := range out {
		n += copy(all[n:], o.files)
		acts.others = append(acts.others, o.others...)
	}
	clear(all[n:])
	acts.files = all[:n:n]
	return acts, nil
}

// checkParquetFrame validates the magic bytes and footer length before
// parquet-go trusts them (a corrupt length would make it allocate up to
// 4 GiB).
func checkParquetFrame(data []byte) error {
	n := len(data)
	if n < 12 || string(data[:4]) != "PAR1" || string(data[n-4:]) != "PAR1" {
		return errors.New("not a parquet file (magic bytes missing)")
	}
	footer := int64(binary.LittleEndian.Uint32(data[n-8 : n-4]))
	if footer <= 0 || footer > int64(n-12) {
		return fmt.Errorf("corrupt parquet: footer length %d in a %d-byte file", footer, n)
	}
	return nil
}

// checkFooter decodes the file metadata with decodeThrift before
// parquet-go does, so that a corrupt footer fails fast.
func checkFooter(data []byte) error {
	n := len(data)
	footer := int(binary.LittleEndian.Uint32(data[n-8 : n-4]))
	var md format.FileMetaData
	if _, err := pq.DecodeThrift(data[n-8-footer:n-8], &md); err != nil {
		return fmt.Errorf("corrupt parquet footer: %w", err)
	}
	return nil
}

// Limits on a page's uncompressed size: real checkpoint pages are about
// 1 MiB; corrupt headers must not make parquet-go allocate gigabytes.
const (
	maxPageBytes = 256 << 20
	maxPageRatio = 1024
)

// checkPageHeaders walks the page headers of every column chunk and checks
// that each page lies inside its chunk and inside the file, and that its
// uncompressed size is plausible.
func checkPageHeaders(data []byte, md *format.FileMetaData) error {
	for gi, rg := range md.RowGroups {
		for ci, cc := range rg.Columns {
			cm := cc.MetaData
			start := cm.DataPageOffset
			if cm.DictionaryPageOffset > 0 && cm.DictionaryPageOffset < start {
				start = cm.DictionaryPageOffset
			}
			end := start + cm.TotalCompressedSize
			if start < 4 || cm.TotalCompressedSize < 0 || end > int64(len(data)) || end < start {
				return fmt.Errorf("corrupt parquet: row group %d column %d spans bytes %d..%d of a %d-byte file", gi, ci, start, end, len(data))
			}
			for pos := start; pos < end; {
				var h format.PageHeader
				hdr, err := pq.DecodeThrift(data[pos:end], &h)
				if err != nil {
					return fmt.Errorf("corrupt parquet: row group %d column %d: page header at byte %d: %v", gi, ci, pos, err)
				}
				body := int64(h.CompressedPageSize)
				if body < 0 || h.UncompressedPageSize < 0 || pos+hdr+body > end ||
					h.UncompressedPageSize > maxPageBytes || int64(h.UncompressedPageSize) > maxPageRatio*body+(1<<20) {
					return fmt.Errorf("corrupt parquet: row group %d column %d: page at byte %d claims %d compressed / %d uncompressed bytes",
						gi, ci, pos, h.CompressedPageSize, h.UncompressedPageSize)
				}
				pos += hdr + body
			}
		}
	}
	return nil
}

// readRowRange appends the actions of rows [start, end) of rg to acts
// (whose files must have room for them all, so that it never
// reallocates).
func readRowRange(rg parquet.RowGroup, start, end int64, cs *checkpointSchema, acts cpActions) (cpActions, error) {
	rows := rg.Rows()
	defer rows.Close()
	if start > 0 {
		if err := rows.SeekToRow(start); err != nil {
			return cpActions{}, err
		}
	}
	var rv rowView
	buf := make([]parquet.Row, 256)
	for pos := start; pos < end; {
		want := min(int64(len(buf)), end-pos)
		n, rerr := rows.ReadRows(buf[:want])
		for i := 0; i < n; i++ {
			if err := rv.index(buf[i], cs.ncols); err != nil {
				return cpActions{}, err
			}
			a, ok, err := cs.rowAction(&rv)
			if err != nil {
				return cpActions{}, fmt.Errorf("row %d: %w", pos+int64(i), err)
			}
			if ok {
				acts.take(a)
			}
		}
		pos += int64(n)
		if rerr == io.EOF {
			if pos < end {
				return cpActions{}, fmt.Errorf("row group ends at row %d, metadata says %d", pos, end)
			}
			break
		}
		if rerr != nil {
			return cpActions{}, rerr
		}
		if n == 0 {
			return cpActions{}, errors.New("no progress reading rows")
		}
	}
	return acts, nil
}

// checkpointSchema is the compiled schema of one checkpoint file.
type checkpointSchema struct {
	root        *pqNode
	tops        map[string]*pqNode
	add, remove *fileNodes
	ncols       int // leaf columns of the file
	// columns, when set, is what readColumnRange reads of this file (nil:
	// every chunk is read row by row).
	columns *columnPlan
}

// fileNodes are the columns of an add or remove struct, resolved once per
// file so that the (many) file actions are read without intermediate maps.
type fileNodes struct {
	node                                                       *pqNode
	path, size, modTime, dataChange, stats, clusteringProvider *pqNode
	baseRowID, defaultRCV, deletionTimestamp, extendedMeta     *pqNode
	pv, tags, pvParsed, statsParsed                            *pqNode
	dv                                                         *pqNode
	dvStorage, dvPath, dvOffset, dvSize, dvCard                *pqNode
	dvOther, other                                             []*pqNode
}

func compileCheckpoint(root *pqNode) *checkpointSchema {
	cs := &checkpointSchema{root: root, tops: map[string]*pqNode{}}
	for _, c := range root.fields {
		cs.tops[c.name] = c
	}
	if n := cs.tops[deltaactions.KindAdd]; n != nil && !n.leaf && n.repeated == nil {
		cs.add = compileFileNodes(n)
	}
	if n := cs.tops[deltaactions.KindRemove]; n != nil && !n.leaf && n.repeated == nil {
		cs.remove = compileFileNodes(n)
	}
	return cs
}

func compileFileNodes(n *pqNode) *fileNodes {
	fn := &fileNodes{node: n}
	for _, c := range n.fields {
		slot := map[string]**pqNode{
			"path": &fn.path, "size": &fn.size, "modificationTime": &fn.modTime, "dataChange": &fn.dataChange,
			"stats": &fn.stats, "clusteringProvider": &fn.clusteringProvider, "baseRowId": &fn.baseRowID,
			"defaultRowCommitVersion": &fn.defaultRCV, "deletionTimestamp": &fn.deletionTimestamp,
			"extendedFileMetadata": &fn.extendedMeta, "partitionValues": &fn.pv, "tags": &fn.tags,
			"partitionValues_parsed": &fn.pvParsed, "stats_parsed": &fn.statsParsed, "deletionVector": &fn.dv,
		}[c.name]
		if slot == nil {
			fn.other = append(fn.other, c)
			continue
		}
		*slot = c
	}
	if fn.dv != nil {
		for _, c := range fn.dv.fields {
			slot := map[string]**pqNode{"storageType": &fn.dvStorage, "pathOrInlineDv": &fn.dvPath, "offset": &fn.dvOffset,
				"sizeInBytes": &fn.dvSize, "cardinality": &fn.dvCard}[c.name]
			if slot == nil {
				fn.dvOther = append(fn.dvOther, c)
				continue
			}
			*slot = c
		}
	}
	return fn
}

// rowAction converts the one non-null top-level action column of a row.
func (cs *checkpointSchema) rowAction(rv *rowView) (deltaactions.Action, bool, error) {
	var a deltaactions.Action
	found := ""
	for _, top := range cs.root.fields {
		if top.leaf || top.repeated != nil || top.skip || !rv.present(top) {
			continue
		}
		if top.name == deltaactions.KindCommitInfo {
			continue // never in checkpoints; ignore if a writer put it there
		}
		if found != "" {
			return a, false, fmt.Errorf("row holds two actions (%s and %s)", found, top.name)
		}
		found = top.name
		var err error
		switch top.name {
		case deltaactions.KindAdd:
			a.Add, err = cs.add.readAdd(rv)
		case deltaactions.KindRemove:
			a.Remove, err = cs.remove.readRemove(rv)
		default:
			var v any
			if v, err = rv.assemble(top); err != nil {
				break
			}
			m, _ := v.(map[string]any)
			switch top.name {
			case deltaactions.KindMetadata, deltaactions.KindProtocol, deltaactions.KindTxn, deltaactions.KindDomainMetadata, deltaactions.KindCheckpointMetadata, deltaactions.KindSidecar, deltaactions.KindCDC:
				a, err = actionViaJSON(top.name, m)
			default:
				var b []byte
				if b, err = json.Marshal(map[string]any{top.name: m}); err == nil {
					a.Unknown = b
				}
			}
		}
		if err != nil {
			return deltaactions.Action{}, false, fmt.Errorf("%s: %w", top.name, err)
		}
	}
	return a, found != "", nil
}

// Typed leaf readers: ok is false when the node is absent or null.

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

// common reads the fields add and remove share.
func (fn *fileNodes) common(rv *rowView) (fileFields, error) {
	var f fileFields
	var err error
	var ok bool
	if f.path, ok, err = rv.strIn(fn.path, &rv.paths); err != nil {
		return f, err
	} else if !ok || f.path == "" {
		return f, errors.New("file action without path")
	}
	if f.pv, err = rv.stringMap(fn.pv); err != nil {
		return f, err
	}
	if f.pv == nil && fn.pvParsed != nil {
		v, err := rv.assemble(fn.pvParsed)
		if err != nil {
			return f, err
		}
		if pp, ok := v.(map[string]any); ok {
			f.pv = partitionStrings(pp)
		}
	}
	if f.size, f.hasSize, err = rv.int64v(fn.size); err != nil {
		return f, err
	}
	if f.stats, _, err = rv.strIn(fn.stats, &rv.stats); err != nil {
		return f, err
	}
	if f.tags, err = rv.tagMap(fn.tags); err != nil {
		return f, err
	}
	if fn.dv != nil && rv.present(fn.dv) {
		if f.dv, err = fn.readDV(rv); err != nil {
			return f, fmt.Errorf("file %s: deletionVector: %w", f.path, err)
		}
	}
	if f.baseRowID, err = rv.int64(fn.baseRowID); err != nil {
		return f, err
	}
	if f.defaultRCV, err = rv.int64(fn.defaultRCV); err != nil {
		return f, err
	}
	f.extra, err = extraFrom(rv, fn.other)
	return f, err
}

// extraFrom assembles the non-null unknown columns as JSON fields.
func extraFrom(rv *rowView, nodes []*pqNode) (deltaactions.Extra, error) {
	var extra deltaactions.Extra
	for _, n := range nodes {
		v, err := rv.assemble(n)
		if err != nil {
			return nil, err
		}
		if v == nil {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.name, err)
		}
		if extra == nil {
			extra = deltaactions.Extra{}
		}
		extra[n.name] = b
	}
	return extra, nil
}

func (fn *fileNodes) readDV(rv *rowView) (*deltaactions.DeletionVector, error) {
	var dv deltaactions.DeletionVector
	var err error
	var ok bool
	if dv.StorageType, ok, err = rv.str(fn.dvStorage); err != nil || !ok {
		return nil, errors.Join(err, errors.New("descriptor without storageType"))
	}
	if dv.PathOrInlineDv, _, err = rv.str(fn.dvPath); err != nil {
		return nil, err
	}
	off, hasOff, err := rv.int64v(fn.dvOffset)
	if err != nil {
		return nil, err
	}
	if hasOff {
		if err := checkDVRange("offset", off); err != nil {
			return nil, err
		}
		o := int32(off)
		dv.Offset = &o
	}
	size, hasSize, err := rv.int64v(fn.dvSize)
	if err != nil {
		return nil, err
	}
	card, hasCard, err := rv.int64v(fn.dvCard)
	if err != nil {
		return nil, err
	}
	if !hasSize || !hasCard {
		return nil, errors.New("descriptor lacks sizeInBytes or cardinality")
	}
	if err := checkDVRange("sizeInBytes", size); err != nil {
		return nil, err
	}
	dv.SizeInBytes, dv.Cardinality = int32(size), card
	if dv.Extra, err = extraFrom(rv, fn.dvOther); err != nil {
		return nil, err
	}
	return &dv, nil
}

func (fn *fileNodes) readAdd(rv *rowView) (*deltaactions.Add, error) {
	f, err := fn.common(rv)
	if err != nil {
		return nil, err
	}
	a := rv.newAdd()
	*a = deltaactions.Add{Path: f.path, PartitionValues: f.pv, Stats: f.stats, Tags: f.tags, DeletionVector: f.dv,
		BaseRowID: f.baseRowID, DefaultRowCommitVersion: f.defaultRCV, Extra: f.extra}
	a.Size = f.size
	if a.ModificationTime, _, err = rv.int64v(fn.modTime); err != nil {
		return nil, err
	}
	if a.DataChange, _, err = rv.boolv(fn.dataChange); err != nil {
		return nil, err
	}
	if cp, ok, err := rv.str(fn.clusteringProvider); err != nil {
		return nil, err
	} else if ok {
		a.ClusteringProvider = ptrTo(cp)
	}
	if a.Stats == "" && fn.statsParsed != nil {
		v, err := rv.assemble(fn.statsParsed)
		if err != nil {
			return nil, err
		}
		if sp, ok := v.(map[string]any); ok {
			a.ParsedStats = statsFromParsed(sp)
		}
	}
	if err := checkFileAction(&deltaactions.Action{Add: a}); err != nil {
		return nil, err
	}
	// Stats are checked here, while the string is in cache, rather than
	// on the snapshot's million files afterwards: a checkpoint holding
	// stats that do not parse is a corrupt checkpoint.
	if err := rv.checkStats(a); err != nil {
		return nil, err
	}
	return a, nil
}

func (fn *fileNodes) readRemove(rv *rowView) (*deltaactions.Remove, error) {
	f, err := fn.common(rv)
	if err != nil {
		return nil, err
	}
	r := &deltaactions.Remove{Path: f.path, PartitionValues: f.pv, Stats: f.stats, Tags: f.tags, DeletionVector: f.dv,
		BaseRowID: f.baseRowID, DefaultRowCommitVersion: f.defaultRCV, Extra: f.extra}
	if f.hasSize {
		size := f.size
		r.Size = &size
	}
	if r.DeletionTimestamp, err = rv.int64(fn.deletionTimestamp); err != nil {
		return nil, err
	}
	if dc, err := rv.bool(fn.dataChange); err != nil {
		return nil, err
	} else if dc != nil {
		r.DataChange = *dc
	}
	if r.ExtendedFileMetadata, err = rv.bool(fn.extendedMeta); err != nil {
		return nil, err
	}
	if err := checkFileAction(&deltaactions.Action{Remove: r}); err != nil {
		return nil, err
	}
	return r, nil
}

// actionViaJSON converts the rare non-file actions through their JSON
// decoders, which keeps unknown fields in Extra.
func actionViaJSON(kind string, m map[string]any) (deltaactions.Action, error) {
	b, err := json.Marshal(map[string]any{kind: m})
	if err != nil {
		return deltaactions.Action{}, err
	}
	return deltaactions.ParseAction(b)
}

// fileFields are the fields common to add and remove read from a row.
type fileFields struct {
	path       string
	pv         map[string]*string
	size       int64
	hasSize    bool
	stats      string
	tags       map[string]string
	dv         *deltaactions.DeletionVector
	baseRowID  *int64
	defaultRCV *int64
	extra      deltaactions.Extra
}

// partitionStrings renders typed partitionValues_parsed values in the
// string forms of the partitionValues map.
func partitionStrings(pp map[string]any) map[string]*string {
	out := make(map[string]*string, len(pp))
	for k, v := range pp {
		var s string
		switch x := v.(type) {
		case nil:
			out[k] = nil
			continue
		case string:
			s = x
		case float64:
			s = strconv.FormatFloat(x, 'g', -1, 64)
		default:
			s = fmt.Sprint(x)
		}
		out[k] = &s
	}
	return out
}

// statsFromParsed converts a checkpoint's stats_parsed struct to Stats,
// with numbers as json.Number like ParseStats. Non-finite floats are
// dropped (they have no JSON form and carry no usable bound).
func statsFromParsed(sp map[string]any) *stats.Stats {
	s := &stats.Stats{}
	if n, ok := sp["numRecords"].(int64); ok {
		s.NumRecords = &n
	}
	if tb, ok := sp["tightBounds"].(bool); ok {
		s.TightBounds = &tb
	}
	if m, ok := sp["minValues"].(map[string]any); ok {
		s.MinValues = jsonNumbers(m)
	}
	if m, ok := sp["maxValues"].(map[string]any); ok {
		s.MaxValues = jsonNumbers(m)
	}
	if m, ok := sp["nullCount"].(map[string]any); ok {
		s.NullCount = jsonNumbers(m)
	}
	return s
}

func jsonNumbers(m map[string]any) map[string]any {
	for k, v := range m {
		switch x := v.(type) {
		case int64:
			m[k] = json.Number(strconv.FormatInt(x, 10))
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				delete(m, k)
				continue
			}
			m[k] = json.Number(strconv.FormatFloat(x, 'g', -1, 64))
		case map[string]any:
			m[k] = jsonNumbers(x)
		}
	}
	return m
}
