package statscollect

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/compactord/compactord/delta/actions"
	deltaprops "github.com/compactord/compactord/delta/props"
	deltaschema "github.com/compactord/compactord/delta/schema"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// statCat is the kind of min/max a leaf column gets.
type statCat uint8

const (
	CatNone  statCat = iota // nullCount only: boolean, binary, array, map, void, variant
	catInt                  // byte, short, integer, long
	catFloat                // float, double
	catDate
	catTimestamp
	catTimestampNTZ
	catString
	catDecimal
)

// leafStats is the running state of one stats leaf (a primitive column,
// or an array/map column that only gets a null count).
type leafStats struct {
	cat      statCat
	col      int  // parquet column index; -1 when the column is not in the data
	nullDef  int  // a value with a lower definition level is null
	repeated bool // array/map: only the first value of a row is looked at
	float32  bool // float column: render with float32 precision
	decBytes bool // decimal stored as (fixed-length) byte array
	scale    int  // decimal scale
	tsMul    int64
	tsDiv    int64 // timestamp raw value * tsMul / tsDiv = micros

	nulls    int64
	seen     bool // a non-null value was seen
	nonFinit bool // NaN or infinity seen: no min/max
	minI     int64
	maxI     int64
	minF     float64
	maxF     float64
	minB     []byte
	maxB     []byte
}

// statsNode mirrors the selected part of the schema, with physical names.
type statsNode struct {
	name     string
	children []*statsNode // struct
	leaf     int          // index into StatsCollector.leaves; -1 for structs
	minMax   bool         // this node or a descendant gets min/max
}

// StatsCollector computes the Delta statistics of one data file from its
// rows (see the protocol digest, section 7): numRecords, minValues,
// maxValues and nullCount for the indexed leaf columns (physical names,
// nested structs as nested objects) and tightBounds when enabled. It keeps
// a running min/max per leaf and does not allocate per value. Not safe for
// concurrent use, except that ObserveColumnPage and ObserveColumnValues may run
// concurrently for values of distinct columns (each column has its own
// state); AddRecords and Finish must not overlap them.
type StatsCollector struct {
	root       []*statsNode
	leaves     []leafStats
	slots      []int32 // parquet column index -> leaf index, -1 = not collected
	prefixLen  int
	tight      bool
	numRecords int64
}

// NewStatsCollector prepares a collector for files of a table. meta gives
// the partition columns, column mapping mode and the stats table
// properties; schema is the table's logical schema (nil: parsed from
// meta.SchemaString); pq is the physical parquet schema of the rows that
// will be observed (physical names, no partition columns), for example
// DataSchemaOf(schema, meta). tightBounds is off until SetProtocol says
// the table supports deletion vectors.
func NewStatsCollector(meta *actions.Metadata, schema *deltaschema.StructType, pq *parquet.Schema) (*StatsCollector, error) {
	if meta == nil || pq == nil {
		return nil, fmt.Errorf("stats collector: metadata and parquet schema are required")
	}
	if schema == nil {
		s, err := deltaschema.ParseSchema(meta.SchemaString)
		if err != nil {
			return nil, fmt.Errorf("stats collector: %w", err)
		}
		schema = s
	}
	mode, err := actions.ColumnMappingMode(meta)
	if err != nil {
		return nil, fmt.Errorf("stats collector: %w", err)
	}
	props := meta.Properties()
	if err := props.Check(deltaprops.PropStringPrefixLength); err != nil {
		return nil, fmt.Errorf("stats collector: %w", err)
	}
	prefixLen := props.StringPrefixLength
	fields, err := StatsFields(meta, schema)
	if err != nil {
		return nil, fmt.Errorf("stats collector: %w", err)
	}
	c := &StatsCollector{prefixLen: prefixLen}
	c.slots = make([]int32, len(pq.Columns()))
	for i := range c.slots {
		c.slots[i] = -1
	}
	b := statsBuilder{c: c, pq: pq, mode: mode}
	for _, f := range fields {
		n, err := b.node(f, pq, nil, 0)
		if err != nil {
			return nil, fmt.Errorf("stats collector: %w", err)
		}
		c.root = append(c.root, n)
	}
	return c, nil
}

// SetProtocol enables tightBounds=true in the output when the protocol
// supports deletion vectors, as Spark does on every file it initializes.
func (c *StatsCollector) SetProtocol(p actions.Protocol) {
	c.tight = p.HasFeature("deletionVectors")
}

// Reset clears the running statistics so the collector can serve the next
// file of the same table.
func (c *StatsCollector) Reset() {
	c.numRecords = 0
	for i := range c.leaves {
		l := &c.leaves[i]
		l.nulls, l.seen, l.nonFinit = 0, false, false
		l.minB, l.maxB = l.minB[:0], l.maxB[:0]
	}
}

// Fresh returns an empty collector configured as c (the same columns,
// string prefix length and tightBounds), for observing part of the values
// of c's file (one row group, say) concurrently with other parts; Merge
// folds it into c.
func (c *StatsCollector) Fresh() *StatsCollector {
	f := *c
	f.leaves = slices.Clone(c.leaves)
	for i := range f.leaves {
		f.leaves[i].minB, f.leaves[i].maxB = nil, nil // not c's buffers
	}
	f.Reset()
	return &f
}

// Merge folds what part (a Fresh of c, or of a collector configured as
// c) observed into c: the statistics of c are then those of the values
// both observed, in any order.
func (c *StatsCollector) Merge(part *StatsCollector) {
	c.numRecords += part.numRecords
	for i := range c.leaves {
		c.leaves[i].merge(&part.leaves[i])
	}
}

// merge folds the running statistics of p, the same leaf, into l.
func (l *leafStats) merge(p *leafStats) {
	l.nulls += p.nulls
	l.nonFinit = l.nonFinit || p.nonFinit
	if !p.seen {
		return
	}
	switch {
	case l.cat == catString:
		l.widenBytes(p.minB, bytes.Compare)
		l.widenBytes(p.maxB, bytes.Compare)
	case l.cat == catDecimal && l.decBytes:
		l.widenBytes(p.minB, compareTwosComplement)
		l.widenBytes(p.maxB, compareTwosComplement)
	case l.cat == catFloat:
		widen(&l.seen, &l.minF, &l.maxF, p.minF)
		widen(&l.seen, &l.minF, &l.maxF, p.maxF)
	default:
		widen(&l.seen, &l.minI, &l.maxI, p.minI)
		widen(&l.seen, &l.minI, &l.maxI, p.maxI)
	}
}

// NumRecords returns the number of rows observed since the last Reset.
func (c *StatsCollector) NumRecords() int64 { return c.numRecords }

// ObserveRows observes a batch of rows.
func (c *StatsCollector) ObserveRows(rows []parquet.Row) {
	for _, r := range rows {
		c.Observe(r)
	}
}

// Observe adds one row, shaped by the parquet schema given to
// NewStatsCollector (as produced by its Deconstruct, or read from a file
// of that schema).
func (c *StatsCollector) Observe(row parquet.Row) {
	c.numRecords++
	for i := range row {
		c.observe(&row[i])
	}
}

// AddRecords counts n records whose values are observed column by column
// (ObserveValues), not as rows.
func (c *StatsCollector) AddRecords(n int64) { c.numRecords += n }

// ObserveValues observes leaf values of any columns, each carrying its
// column index and levels (as values read from a page do), without counting
// records: the values of n rows observed in any order, plus AddRecords(n),
// give the statistics of Observe on those rows.
func (c *StatsCollector) ObserveValues(vals []parquet.Value) {
	for len(vals) > 0 {
		vals = vals[c.observeRun(vals):]
	}
}

// observeRun folds the leading values of vals that are of one column (a
// batch of ReadColumn is all of one) with the column's leaf looked up once,
// integers and strings in loops of their own, and returns how many it
// folded (at least one).
func (c *StatsCollector) observeRun(vals []parquet.Value) int {
	col := vals[0].Column()
	n := 1
	for n < len(vals) && vals[n].Column() == col {
		n++
	}
	c.ObserveColumnValues(col, vals[:n])
	return n
}

// ObserveColumnValues folds values of leaf column col (whatever column
// index they carry: values passed through from a file whose columns are in
// another order keep the file's), with the leaf looked up once and integers
// and strings in loops of their own. It counts no records.
func (c *StatsCollector) ObserveColumnValues(col int, run []parquet.Value) {
	if col < 0 || col >= len(c.slots) || c.slots[col] < 0 || len(run) == 0 {
		return
	}
	l := &c.leaves[c.slots[col]]
	ints := l.cat == catInt || l.cat == catDate || l.cat == catTimestamp || l.cat == catTimestampNTZ || l.cat == catDecimal && !l.decBytes
	switch {
	case !l.repeated && ints:
		c.observeInts(col, l, run)
	case !l.repeated && l.cat == catString:
		for i := range run {
			if v := &run[i]; v.IsNull() {
				l.nulls++
			} else {
				l.widenBytes(v.ByteArray(), bytes.Compare)
			}
		}
	default:
		for i := range run {
			c.observeAt(col, &run[i])
		}
	}
}

// observeInts folds values of a non-repeated integer leaf, INT32 and INT64
// ones in registers; any other kind (INT96) goes through observe.
func (c *StatsCollector) observeInts(col int, l *leafStats, run []parquet.Value) {
	seen, lo, hi := l.seen, l.minI, l.maxI
	for i := range run {
		v := &run[i]
		var x int64
		switch {
		case v.IsNull():
			l.nulls++
			continue
		case v.Kind() == parquet.Int64:
			x = v.Int64()
		case v.Kind() == parquet.Int32:
			x = int64(v.Int32())
		default:
			l.seen, l.minI, l.maxI = seen, lo, hi
			c.observeAt(col, v)
			seen, lo, hi = l.seen, l.minI, l.maxI
			continue
		}
		switch {
		case !seen:
			lo, hi, seen = x, x, true
		case x < lo:
			lo = x
		case x > hi:
			hi = x
		}
	}
	l.seen, l.minI, l.maxI = seen, lo, hi
}

// ObserveRowGroup observes every row of rg column by column: only the
// columns the statistics cover are decoded, page by page, and no row is
// assembled. buf is scratch for the values (nil: one is allocated).
func (c *StatsCollector) ObserveRowGroup(rg parquet.RowGroup, buf []parquet.Value) error {
	if len(buf) == 0 {
		buf = make([]parquet.Value, 1024)
	}
	for col, cc := range rg.ColumnChunks() {
		if col >= len(c.slots) || c.slots[col] < 0 {
			continue
		}
		if err := c.observeChunk(cc, buf); err != nil {
			return fmt.Errorf("stats of column %d: %w", col, err)
		}
	}
	c.numRecords += rg.NumRows()
	return nil
}

func (c *StatsCollector) observeChunk(cc parquet.ColumnChunk, buf []parquet.Value) error {
	return ReadPages(cc, func(p parquet.Page) error {
		if c.observeBounds(p.Column(), p) {
			return nil
		}
		return ReadPageValues(p, buf, c.ObserveValues)
	})
}

// ReadPages calls fn with every page of a column chunk, in order,
// releasing each page once fn returns.
func ReadPages(cc parquet.ColumnChunk, fn func(parquet.Page) error) error {
	pages := cc.Pages()
	defer pages.Close()
	for {
		p, err := pages.ReadPage()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		err = fn(p)
		parquet.Release(p)
		if err != nil {
			return err
		}
	}
}

// ReadPageValues decodes the values of p, len(buf) at a time, and calls fn
// with each batch (the values are only valid during the call).
func ReadPageValues(p parquet.Page, buf []parquet.Value, fn func([]parquet.Value)) error {
	vr := p.Values()
	for {
		n, err := vr.ReadValues(buf)
		fn(buf[:n])
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// ObserveColumnPage folds a whole page of leaf column col's values
// (whatever column index the page carries) into the statistics from its
// bounds and null count, and reports whether it could (see
// observeBounds); when it returns false, observe the page's values.
func (c *StatsCollector) ObserveColumnPage(col int, p parquet.Page) bool {
	return c.observeBounds(col, p)
}

// observeBounds folds a whole page into its column's statistics from the
// page's null count and bounds, without reading its values, when those are
// exactly what observing every value would give: a non-repeated leaf whose
// statistics order is the page type's own (signed integers, dates,
// timestamps and integer decimals stored as INT32/INT64, strings as byte
// arrays compared bytewise) or that only counts nulls. Floats (NaN),
// INT96, unsigned integers and binary decimals are read value by value.
func (c *StatsCollector) observeBounds(col int, p parquet.Page) bool {
	if col < 0 || col >= len(c.slots) || c.slots[col] < 0 {
		return false
	}
	l := &c.leaves[c.slots[col]]
	if l.repeated {
		return false
	}
	typ := p.Type()
	kind := typ.Kind()
	signedInt := kind == parquet.Int32 || kind == parquet.Int64
	if lt := typ.LogicalType(); lt != nil {
		if it, ok := lt.Value.(*format.IntType); ok && !it.IsSigned {
			signedInt = false
		}
	}
	switch l.cat {
	case CatNone:
	case catInt, catDate, catTimestamp, catTimestampNTZ:
		if !signedInt {
			return false
		}
	case catDecimal:
		if l.decBytes || !signedInt {
			return false
		}
	case catString:
		if kind != parquet.ByteArray {
			return false
		}
	default:
		return false
	}
	l.nulls += p.NumNulls()
	if lo, hi, ok := p.Bounds(); ok && l.cat != CatNone {
		c.observeAt(col, &lo)
		c.observeAt(col, &hi)
	}
	return true
}

// observe folds one leaf value into its column's statistics.
func (c *StatsCollector) observe(v *parquet.Value) { c.observeAt(v.Column(), v) }

// observeAt folds one value of leaf column col into its statistics.
func (c *StatsCollector) observeAt(col int, v *parquet.Value) {
	if col < 0 || col >= len(c.slots) {
		return
	}
	s := c.slots[col]
	if s < 0 {
		return
	}
	l := &c.leaves[s]
	if l.repeated {
		if v.RepetitionLevel() == 0 && v.DefinitionLevel() < l.nullDef {
			l.nulls++
		}
		return
	}
	if v.IsNull() {
		l.nulls++
		return
	}
	switch l.cat {
	case CatNone:
	case catInt, catDate, catTimestamp, catTimestampNTZ:
		x, ok := IntegerValue(*v)
		if v.Kind() == parquet.Int96 {
			x, ok = statsInt96Micros(v.Int96()), true
		}
		if !ok {
			return
		}
		widen(&l.seen, &l.minI, &l.maxI, x)
	case catFloat:
		var x float64
		switch v.Kind() {
		case parquet.Float:
			x = float64(v.Float())
		case parquet.Double:
			x = v.Double()
		case parquet.Int32:
			x = float64(v.Int32())
		case parquet.Int64:
			x = float64(v.Int64())
		default:
			return
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			l.nonFinit = true
			return
		}
		widen(&l.seen, &l.minF, &l.maxF, x)
	case catString:
		l.widenBytes(v.ByteArray(), bytes.Compare)
	case catDecimal:
		if l.decBytes {
			l.widenBytes(v.ByteArray(), compareTwosComplement)
			return
		}
		x, ok := IntegerValue(*v)
		if !ok {
			return
		}
		widen(&l.seen, &l.minI, &l.maxI, x)
	}
}

// IntegerValue returns the value of an INT32 or INT64 parquet value; ok is
// false for any other kind.
func IntegerValue(v parquet.Value) (x int64, ok bool) {
	switch v.Kind() {
	case parquet.Int32:
		return int64(v.Int32()), true
	case parquet.Int64:
		return v.Int64(), true
	}
	return 0, false
}

// widen extends the range [lo, hi] to x; seen says whether it holds a
// value yet.
func widen[T cmp.Ordered](seen *bool, lo, hi *T, x T) {
	switch {
	case !*seen:
		*lo, *hi, *seen = x, x, true
	case x < *lo:
		*lo = x
	case x > *hi:
		*hi = x
	}
}

// widenBytes extends the leaf's byte range to b in the order of compare,
// copying b (it may point into a reused buffer).
func (l *leafStats) widenBytes(b []byte, compare func(a, b []byte) int) {
	switch {
	case !l.seen:
		l.minB = append(l.minB[:0], b...)
		l.maxB = append(l.maxB[:0], b...)
		l.seen = true
	case compare(b, l.minB) < 0:
		l.minB = append(l.minB[:0], b...)
	case compare(b, l.maxB) > 0:
		l.maxB = append(l.maxB[:0], b...)
	}
}
