package delta

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"time"

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
	var vals []parquet.Value
	if n.isMap {
		vals = r.values(n.key.col)
	} else {
		vals = r.values(n.elem.col)
	}
	if vals[0].DefinitionLevel() < n.def {
		return nil, nil
	}
	if !n.isMap {
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
	out := make(map[string]any, len(vals))
	if vals[0].DefinitionLevel() < n.repeated.def {
		return out, nil
	}
	evals := r.values(n.elem.col)
	if len(evals) != len(vals) {
		return nil, fmt.Errorf("%s: %d map keys but %d values", n.name, len(vals), len(evals))
	}
	for i, kv := range vals {
		k, err := leafValue(n.key, kv)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.name, err)
		}
		var e any
		if evals[i].DefinitionLevel() >= n.elem.def {
			if e, err = leafValue(n.elem, evals[i]); err != nil {
				return nil, fmt.Errorf("%s: %w", n.name, err)
			}
		}
		out[fmt.Sprint(k)] = e
	}
	return out, nil
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
				return decimalNumber(twosComplement(b), int(t.Scale)), nil
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

func twosComplement(b []byte) *big.Int {
	x := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(len(b)*8)))
	}
	return x
}

func decimalNumber(unscaled *big.Int, scale int) json.Number {
	s := unscaled.String()
	if scale <= 0 {
		return json.Number(s)
	}
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	for len(s) <= scale {
		s = "0" + s
	}
	s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	if neg {
		s = "-" + s
	}
	return json.Number(s)
}

// parseCheckpointParquet reads every action row of a checkpoint or sidecar
// parquet file.
func parseCheckpointParquet(data []byte) (actions []Action, err error) {
	defer func() {
		// parquet-go may panic on malformed input; turn it into an error.
		if r := recover(); r != nil {
			actions, err = nil, fmt.Errorf("corrupt parquet: %v", r)
		}
	}()
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("open parquet: %w", err)
	}
	ncols := len(f.Schema().Columns())
	root, err := compileNode(f.Schema(), nil, f.Schema(), 0)
	if err != nil {
		return nil, err
	}
	tops := map[string]*pqNode{}
	for _, c := range root.fields {
		tops[c.name] = c
	}
	if tops[kindAdd] == nil && tops[kindRemove] == nil && tops[kindMetadata] == nil && tops[kindProtocol] == nil && tops[kindSidecar] == nil {
		return nil, errors.New("not a checkpoint: no add, remove, metaData, protocol or sidecar column")
	}
	actions = make([]Action, 0, f.NumRows())
	var rv rowView
	buf := make([]parquet.Row, 256)
	for gi, rg := range f.RowGroups() {
		rows := rg.Rows()
		for {
			n, rerr := rows.ReadRows(buf)
			for i := 0; i < n; i++ {
				if err := rv.index(buf[i], ncols); err != nil {
					rows.Close()
					return nil, fmt.Errorf("row group %d: %w", gi, err)
				}
				a, ok, err := rowAction(&rv, root)
				if err != nil {
					rows.Close()
					return nil, fmt.Errorf("row group %d: %w", gi, err)
				}
				if ok {
					actions = append(actions, a)
				}
			}
			if rerr == io.EOF {
				break
			}
			if rerr != nil {
				rows.Close()
				return nil, fmt.Errorf("row group %d: %w", gi, rerr)
			}
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("row group %d: %w", gi, err)
		}
	}
	return actions, nil
}

// rowAction converts the one non-null top-level action column of a row.
func rowAction(rv *rowView, root *pqNode) (Action, bool, error) {
	var a Action
	for _, top := range root.fields {
		if top.leaf || top.repeated != nil || !rv.present(top) {
			continue
		}
		v, err := rv.assemble(top)
		if err != nil {
			return a, false, err
		}
		m, _ := v.(map[string]any)
		if m == nil {
			continue
		}
		if a.Kind() != "" || a.Unknown != nil {
			return a, false, fmt.Errorf("row holds two actions (%s and %s)", a.Kind(), top.name)
		}
		switch top.name {
		case kindAdd:
			a.Add, err = addFromMap(m)
		case kindRemove:
			a.Remove, err = removeFromMap(m)
		case kindMetadata, kindProtocol, kindTxn, kindDomainMetadata, kindCheckpointMetadata, kindSidecar, kindCDC:
			a, err = actionViaJSON(top.name, m)
		case kindCommitInfo:
			continue // never in checkpoints; ignore if a writer put it there
		default:
			b, jerr := json.Marshal(map[string]any{top.name: m})
			if jerr != nil {
				return a, false, fmt.Errorf("%s: %w", top.name, jerr)
			}
			a.Unknown = b
		}
		if err != nil {
			return Action{}, false, fmt.Errorf("%s: %w", top.name, err)
		}
	}
	return a, a.Kind() != "" || a.Unknown != nil, nil
}

// actionViaJSON converts the rare non-file actions through their JSON
// decoders, which keeps unknown fields in Extra.
func actionViaJSON(kind string, m map[string]any) (Action, error) {
	b, err := json.Marshal(map[string]any{kind: m})
	if err != nil {
		return Action{}, err
	}
	return ParseAction(b)
}

func mString(m map[string]any, k string) (string, error) {
	switch v := m[k].(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	default:
		return "", fmt.Errorf("%s: want string, got %T", k, v)
	}
}

func mInt64(m map[string]any, k string) (*int64, error) {
	switch v := m[k].(type) {
	case nil:
		return nil, nil
	case int64:
		return &v, nil
	default:
		return nil, fmt.Errorf("%s: want integer, got %T", k, v)
	}
}

func mBool(m map[string]any, k string) (*bool, error) {
	switch v := m[k].(type) {
	case nil:
		return nil, nil
	case bool:
		return &v, nil
	default:
		return nil, fmt.Errorf("%s: want boolean, got %T", k, v)
	}
}

func mStringMap(m map[string]any, k string) (map[string]*string, error) {
	v, ok := m[k]
	if !ok || v == nil {
		return nil, nil
	}
	mm, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: want map, got %T", k, v)
	}
	out := make(map[string]*string, len(mm))
	for key, e := range mm {
		switch s := e.(type) {
		case nil:
			out[key] = nil
		case string:
			out[key] = &s
		default:
			return nil, fmt.Errorf("%s[%s]: want string, got %T", k, key, e)
		}
	}
	return out, nil
}

func mTags(m map[string]any, k string) (map[string]string, error) {
	sm, err := mStringMap(m, k)
	if err != nil || sm == nil {
		return nil, err
	}
	out := make(map[string]string, len(sm))
	for key, v := range sm {
		if v != nil {
			out[key] = *v
		}
	}
	return out, nil
}

// fileFields are the fields common to add and remove read from a row.
type fileFields struct {
	path       string
	pv         map[string]*string
	size       *int64
	stats      string
	tags       map[string]string
	dv         *DeletionVector
	baseRowID  *int64
	defaultRCV *int64
	extra      Extra
}

func readFileFields(m map[string]any, known map[string]bool) (fileFields, error) {
	var f fileFields
	var err error
	if f.path, err = mString(m, "path"); err != nil {
		return f, err
	}
	if f.path == "" {
		return f, errors.New("file action without path")
	}
	if f.pv, err = mStringMap(m, "partitionValues"); err != nil {
		return f, err
	}
	if f.pv == nil {
		if pp, ok := m["partitionValues_parsed"].(map[string]any); ok {
			f.pv = partitionStrings(pp)
		}
	}
	if f.size, err = mInt64(m, "size"); err != nil {
		return f, err
	}
	if f.stats, err = mString(m, "stats"); err != nil {
		return f, err
	}
	if f.tags, err = mTags(m, "tags"); err != nil {
		return f, err
	}
	if dvm, ok := m["deletionVector"].(map[string]any); ok {
		if f.dv, err = dvFromMap(dvm); err != nil {
			return f, fmt.Errorf("deletionVector: %w", err)
		}
	}
	if f.baseRowID, err = mInt64(m, "baseRowId"); err != nil {
		return f, err
	}
	if f.defaultRCV, err = mInt64(m, "defaultRowCommitVersion"); err != nil {
		return f, err
	}
	for k, v := range m {
		if known[k] || v == nil {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return f, fmt.Errorf("%s: %w", k, err)
		}
		if f.extra == nil {
			f.extra = Extra{}
		}
		f.extra[k] = b
	}
	return f, nil
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

func dvFromMap(m map[string]any) (*DeletionVector, error) {
	var dv DeletionVector
	var err error
	if dv.StorageType, err = mString(m, "storageType"); err != nil {
		return nil, err
	}
	if dv.PathOrInlineDv, err = mString(m, "pathOrInlineDv"); err != nil {
		return nil, err
	}
	if off, err := mInt64(m, "offset"); err != nil {
		return nil, err
	} else if off != nil {
		o := int32(*off)
		dv.Offset = &o
	}
	size, err := mInt64(m, "sizeInBytes")
	if err != nil {
		return nil, err
	}
	card, err := mInt64(m, "cardinality")
	if err != nil {
		return nil, err
	}
	if size == nil || card == nil || dv.StorageType == "" {
		return nil, errors.New("descriptor lacks storageType, sizeInBytes or cardinality")
	}
	dv.SizeInBytes, dv.Cardinality = int32(*size), *card
	for k, v := range m {
		switch k {
		case "storageType", "pathOrInlineDv", "offset", "sizeInBytes", "cardinality":
			continue
		}
		if v == nil {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		if dv.Extra == nil {
			dv.Extra = Extra{}
		}
		dv.Extra[k] = b
	}
	return &dv, nil
}

func knownSet(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func addFromMap(m map[string]any) (*Add, error) {
	known := knownSet("path", "partitionValues", "size", "modificationTime", "dataChange", "stats", "tags",
		"deletionVector", "baseRowId", "defaultRowCommitVersion", "clusteringProvider", "stats_parsed", "partitionValues_parsed")
	f, err := readFileFields(m, known)
	if err != nil {
		return nil, err
	}
	a := &Add{Path: f.path, PartitionValues: f.pv, Stats: f.stats, Tags: f.tags, DeletionVector: f.dv,
		BaseRowID: f.baseRowID, DefaultRowCommitVersion: f.defaultRCV, Extra: f.extra}
	if f.size != nil {
		a.Size = *f.size
	}
	if mt, err := mInt64(m, "modificationTime"); err != nil {
		return nil, err
	} else if mt != nil {
		a.ModificationTime = *mt
	}
	if dc, err := mBool(m, "dataChange"); err != nil {
		return nil, err
	} else if dc != nil {
		a.DataChange = *dc
	}
	if cp, err := mString(m, "clusteringProvider"); err != nil {
		return nil, err
	} else if cp != "" {
		a.ClusteringProvider = &cp
	}
	if a.Stats == "" {
		if sp, ok := m["stats_parsed"].(map[string]any); ok {
			a.ParsedStats = statsFromParsed(sp)
		}
	}
	return a, nil
}

func removeFromMap(m map[string]any) (*Remove, error) {
	known := knownSet("path", "deletionTimestamp", "dataChange", "extendedFileMetadata", "partitionValues", "size",
		"stats", "tags", "deletionVector", "baseRowId", "defaultRowCommitVersion", "stats_parsed", "partitionValues_parsed")
	f, err := readFileFields(m, known)
	if err != nil {
		return nil, err
	}
	r := &Remove{Path: f.path, PartitionValues: f.pv, Size: f.size, Stats: f.stats, Tags: f.tags, DeletionVector: f.dv,
		BaseRowID: f.baseRowID, DefaultRowCommitVersion: f.defaultRCV, Extra: f.extra}
	if r.DeletionTimestamp, err = mInt64(m, "deletionTimestamp"); err != nil {
		return nil, err
	}
	if dc, err := mBool(m, "dataChange"); err != nil {
		return nil, err
	} else if dc != nil {
		r.DataChange = *dc
	}
	if r.ExtendedFileMetadata, err = mBool(m, "extendedFileMetadata"); err != nil {
		return nil, err
	}
	return r, nil
}

// statsFromParsed converts a checkpoint's stats_parsed struct to Stats,
// with numbers as json.Number like ParseStats. Non-finite floats are
// dropped (they have no JSON form and carry no usable bound).
func statsFromParsed(sp map[string]any) *Stats {
	s := &Stats{}
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
