package checkpointwrite

import (
	"encoding/json"
	"math"
	"math/big"
	"slices"
	"strconv"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/schema"
	deltastats "github.com/compactord/compactord/delta/stats"
	"github.com/compactord/compactord/delta/statscollect"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
)

// rowBuilder assembles one checkpoint row column by column: parquet-go
// wants a row's values grouped by column in column order, while actions are
// emitted field by field (a map's keys and values interleave).
type rowBuilder struct {
	s    *cpSchema
	cols [][]parquet.Value
	keys []string // scratch for sorted map keys
}

func newRowBuilder(s *cpSchema) *rowBuilder {
	return &rowBuilder{s: s, cols: make([][]parquet.Value, s.ncols)}
}

// finish appends the assembled row to dst (reusing its capacity) and
// resets the builder.
func (b *rowBuilder) finish(dst parquet.Row) parquet.Row {
	dst = dst[:0]
	for c := range b.cols {
		dst = append(dst, b.cols[c]...)
		b.cols[c] = b.cols[c][:0]
	}
	return dst
}

// null emits a null at definition level def for every leaf below n.
func (b *rowBuilder) null(n *wnode, def, rep int) {
	for c := n.first; c < n.end; c++ {
		b.cols[c] = append(b.cols[c], parquet.NullValue().Level(rep, def, c))
	}
}

// absent emits n as null (its parent present).
func (b *rowBuilder) absent(n *wnode) { b.null(n, n.def-1, 0) }

func (b *rowBuilder) put(n *wnode, v parquet.Value) {
	b.cols[n.col] = append(b.cols[n.col], v.Level(0, n.def, n.col))
}

func (b *rowBuilder) str(n *wnode, s string) { b.put(n, parquet.ByteArrayValue([]byte(s))) }

func (b *rowBuilder) optStr(n *wnode, s *string) {
	if s == nil {
		b.absent(n)
		return
	}
	b.str(n, *s)
}

func (b *rowBuilder) i64(n *wnode, v int64) { b.put(n, parquet.Int64Value(v)) }

func (b *rowBuilder) optI64(n *wnode, v *int64) {
	if v == nil {
		b.absent(n)
		return
	}
	b.i64(n, *v)
}

func (b *rowBuilder) boolean(n *wnode, v bool) { b.put(n, parquet.BooleanValue(v)) }

// strMap emits a MAP<string,string> (nil map = null, keys sorted).
func strMap[V string | *string](b *rowBuilder, n *wnode, m map[string]V, isNil bool, val func(V) (string, bool)) {
	if isNil {
		b.absent(n)
		return
	}
	key, value := n.children[0], n.children[1]
	if len(m) == 0 {
		b.cols[key.col] = append(b.cols[key.col], parquet.NullValue().Level(0, n.def, key.col))
		b.cols[value.col] = append(b.cols[value.col], parquet.NullValue().Level(0, n.def, value.col))
		return
	}
	b.keys = b.keys[:0]
	for k := range m {
		b.keys = append(b.keys, k)
	}
	slices.Sort(b.keys)
	for i, k := range b.keys {
		rep := 0
		if i > 0 {
			rep = n.rep
		}
		b.cols[key.col] = append(b.cols[key.col], parquet.ByteArrayValue([]byte(k)).Level(rep, key.def, key.col))
		if s, ok := val(m[k]); ok {
			b.cols[value.col] = append(b.cols[value.col], parquet.ByteArrayValue([]byte(s)).Level(rep, value.def, value.col))
		} else {
			b.cols[value.col] = append(b.cols[value.col], parquet.NullValue().Level(rep, value.def-1, value.col))
		}
	}
}

func (b *rowBuilder) tags(n *wnode, m map[string]string) {
	strMap(b, n, m, m == nil, func(s string) (string, bool) { return s, true })
}

func (b *rowBuilder) partitionValues(n *wnode, m map[string]*string) {
	strMap(b, n, m, m == nil, func(s *string) (string, bool) {
		if s == nil {
			return "", false
		}
		return *s, true
	})
}

// strList emits a LIST<string>; null when isNil.
func (b *rowBuilder) strList(n *wnode, l []string, isNil bool) {
	if isNil {
		b.absent(n)
		return
	}
	el := n.children[0]
	if len(l) == 0 {
		b.cols[el.col] = append(b.cols[el.col], parquet.NullValue().Level(0, n.def, el.col))
		return
	}
	for i, s := range l {
		rep := 0
		if i > 0 {
			rep = n.rep
		}
		b.cols[el.col] = append(b.cols[el.col], parquet.ByteArrayValue([]byte(s)).Level(rep, el.def, el.col))
	}
}

// only emits the row's single action column via fill and nulls for every
// other top-level column.
func (b *rowBuilder) only(action *wnode, fill func()) {
	for _, t := range b.s.tops {
		if t == action {
			fill()
			continue
		}
		b.null(t, 0, 0)
	}
}

func (b *rowBuilder) dv(n *wnode, dv *actions.DeletionVector) {
	if dv == nil {
		b.absent(n)
		return
	}
	b.str(n.child("storageType"), dv.StorageType)
	b.str(n.child("pathOrInlineDv"), dv.PathOrInlineDv)
	if dv.Offset != nil {
		b.put(n.child("offset"), parquet.Int32Value(*dv.Offset))
	} else {
		b.absent(n.child("offset"))
	}
	b.put(n.child("sizeInBytes"), parquet.Int32Value(dv.SizeInBytes))
	b.i64(n.child("cardinality"), dv.Cardinality)
	var maxRow *int64
	if raw, ok := dv.Extra["maxRowIndex"]; ok {
		if v, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			maxRow = &v
		}
	}
	b.optI64(n.child("maxRowIndex"), maxRow)
}

// addRow emits an add as checkpoints carry it: dataChange=false, stats as
// JSON and/or typed per the schema. stats is the add's JSON stats (possibly
// rebuilt from ParsedStats by the caller).
func (b *rowBuilder) addRow(a *actions.Add, stats string, st *deltastats.Stats, pv map[string]any) {
	n := b.s.add
	b.only(n, func() {
		b.str(n.child("path"), a.Path)
		b.partitionValues(n.child("partitionValues"), nonNilPV(a.PartitionValues))
		b.i64(n.child("size"), a.Size)
		b.i64(n.child("modificationTime"), a.ModificationTime)
		b.boolean(n.child("dataChange"), false)
		b.tags(n.child("tags"), a.Tags)
		b.dv(n.child("deletionVector"), a.DeletionVector)
		b.optI64(n.child("baseRowId"), a.BaseRowID)
		b.optI64(n.child("defaultRowCommitVersion"), a.DefaultRowCommitVersion)
		b.optStr(n.child("clusteringProvider"), a.ClusteringProvider)
		if c := n.child("stats"); c != nil {
			if stats == "" {
				b.absent(c)
			} else {
				b.str(c, stats)
			}
		}
		if c := b.s.pvParsed; c != nil {
			b.typedStruct(c, pv, false, boundNone)
		}
		if c := b.s.statsParsed; c != nil {
			b.statsStruct(c, st)
		}
	})
}

// nonNilPV returns an empty map for a nil one: add.partitionValues is
// required (an unpartitioned table's adds carry {}).
func nonNilPV(m map[string]*string) map[string]*string {
	if m == nil {
		return map[string]*string{}
	}
	return m
}

// removeRow emits a tombstone: dataChange=false, no stats, no tags.
func (b *rowBuilder) removeRow(r *actions.Remove) {
	n := b.s.remove
	b.only(n, func() {
		b.str(n.child("path"), r.Path)
		b.optI64(n.child("deletionTimestamp"), r.DeletionTimestamp)
		b.boolean(n.child("dataChange"), false)
		if r.ExtendedFileMetadata != nil {
			b.boolean(n.child("extendedFileMetadata"), *r.ExtendedFileMetadata)
		} else {
			b.absent(n.child("extendedFileMetadata"))
		}
		b.partitionValues(n.child("partitionValues"), r.PartitionValues)
		b.optI64(n.child("size"), r.Size)
		b.dv(n.child("deletionVector"), r.DeletionVector)
		b.optI64(n.child("baseRowId"), r.BaseRowID)
		b.optI64(n.child("defaultRowCommitVersion"), r.DefaultRowCommitVersion)
	})
}

func (b *rowBuilder) metadataRow(m *actions.Metadata) {
	n := b.s.meta
	b.only(n, func() {
		b.str(n.child("id"), m.ID)
		b.optStr(n.child("name"), m.Name)
		b.optStr(n.child("description"), m.Description)
		f := n.child("format")
		b.str(f.child("provider"), m.Format.Provider)
		opts := m.Format.Options
		if opts == nil {
			opts = map[string]string{}
		}
		b.tags(f.child("options"), opts)
		b.str(n.child("schemaString"), m.SchemaString)
		b.strList(n.child("partitionColumns"), m.PartitionColumns, false)
		conf := m.Configuration
		if conf == nil {
			conf = map[string]string{}
		}
		b.tags(n.child("configuration"), conf)
		b.optI64(n.child("createdTime"), m.CreatedTime)
	})
}

func (b *rowBuilder) protocolRow(p *actions.Protocol) {
	n := b.s.protocol
	b.only(n, func() {
		b.put(n.child("minReaderVersion"), parquet.Int32Value(int32(p.MinReaderVersion)))
		b.put(n.child("minWriterVersion"), parquet.Int32Value(int32(p.MinWriterVersion)))
		// Reader 3 / writer 7 need non-null feature lists; others null.
		b.strList(n.child("readerFeatures"), p.ReaderFeatures, p.MinReaderVersion < 3)
		b.strList(n.child("writerFeatures"), p.WriterFeatures, p.MinWriterVersion < 7)
	})
}

func (b *rowBuilder) txnRow(t *actions.Txn) {
	n := b.s.txn
	b.only(n, func() {
		b.str(n.child("appId"), t.AppID)
		b.i64(n.child("version"), t.Version)
		b.optI64(n.child("lastUpdated"), t.LastUpdated)
	})
}

func (b *rowBuilder) domainRow(d *actions.DomainMetadata) {
	n := b.s.domain
	b.only(n, func() {
		b.str(n.child("domain"), d.Domain)
		b.str(n.child("configuration"), d.Configuration)
		b.boolean(n.child("removed"), d.Removed)
	})
}

func (b *rowBuilder) checkpointMetadataRow(c *actions.CheckpointMetadata) {
	n := b.s.cpMeta
	b.only(n, func() {
		b.i64(n.child("version"), c.Version)
		b.tags(n.child("tags"), c.Tags)
	})
}

func (b *rowBuilder) sidecarRow(s *actions.Sidecar) {
	n := b.s.sidecar
	b.only(n, func() {
		b.str(n.child("path"), s.Path)
		b.i64(n.child("sizeInBytes"), s.SizeInBytes)
		b.i64(n.child("modificationTime"), s.ModificationTime)
		b.tags(n.child("tags"), s.Tags)
	})
}

// statsStruct emits stats_parsed from parsed statistics (nil = null).
func (b *rowBuilder) statsStruct(n *wnode, st *deltastats.Stats) {
	if st == nil {
		b.absent(n)
		return
	}
	for _, c := range n.children {
		switch c.name {
		case "numRecords":
			b.optI64(c, st.NumRecords)
		case "tightBounds":
			if st.TightBounds != nil {
				b.boolean(c, *st.TightBounds)
			} else {
				b.absent(c)
			}
		case "minValues":
			b.typedStruct(c, st.MinValues, st.MinValues == nil, boundMin)
		case "maxValues":
			b.typedStruct(c, st.MaxValues, st.MaxValues == nil, boundMax)
		case "nullCount":
			b.typedStruct(c, st.NullCount, st.NullCount == nil, boundNone)
		}
	}
}

// bound says which statistic a typed struct holds: string minimums and
// maximums longer than maxParsedString are cut (cutBound).
type bound int

const (
	boundNone bound = iota
	boundMin
	boundMax
)

// maxParsedString is the longest string bound stats_parsed keeps verbatim
// (parquet-mr's limit on a statistic, MAX_STATS_SIZE); longer ones are cut
// to parsedStringPrefix UTF-16 units as Spark cuts the bounds it collects
// (TruncateStringMin, TruncateStringMax), so that a writer that did not
// truncate its stats does not put their strings in the checkpoint twice
// more, and in its footer's statistics. The cut bounds still hold: a
// prefix is below every string it starts, a prefix and its tie-breaker
// above.
const (
	maxParsedString    = 4 << 10
	parsedStringPrefix = 1024
)

// cutBound is v, a decoded stats value, with a string over
// maxParsedString bytes cut as its bound requires; ok is false when a
// maximum cannot be cut (the bound is then null).
func cutBound(v any, which bound) (any, bool) {
	s, isString := v.(string)
	if !isString || len(s) <= maxParsedString || which == boundNone {
		return v, true
	}
	if which == boundMin {
		return statscollect.TruncateStringMin(s, parsedStringPrefix), true
	}
	return statscollect.TruncateStringMax(s, parsedStringPrefix)
}

// typedStruct emits a struct of typed leaves from decoded JSON values
// keyed by child name. Missing or unconvertible values are null, as
// Spark's from_json and CAST (ANSI off) make them.
func (b *rowBuilder) typedStruct(n *wnode, m map[string]any, isNil bool, which bound) {
	if isNil {
		b.absent(n)
		return
	}
	for _, c := range n.children {
		v, ok := m[c.name]
		if c.kind == wStruct {
			sub, isMap := v.(map[string]any)
			b.typedStruct(c, sub, !ok || !isMap, which)
			continue
		}
		if v, ok = cutBound(v, which); !ok {
			b.absent(c)
			continue
		}
		pv, ok := typedLeafValue(v, c.dt)
		if !ok {
			b.absent(c)
			continue
		}
		b.put(c, pv)
	}
}

// typedLeafValue converts a value decoded from JSON stats (json.Number,
// string) or parsed from a partition value (ParsePartitionValue's types)
// into the parquet value of type t.
func typedLeafValue(v any, t *schema.DataType) (parquet.Value, bool) {
	if v == nil || t == nil {
		return parquet.Value{}, false
	}
	switch t.Name {
	case "byte", "short", "integer", "long":
		var n int64
		switch x := v.(type) {
		case int64:
			n = x
		case json.Number:
			i, err := strconv.ParseInt(string(x), 10, 64)
			if err != nil {
				return parquet.Value{}, false
			}
			n = i
		default:
			return parquet.Value{}, false
		}
		bits := map[string]int{"byte": 8, "short": 16, "integer": 32, "long": 64}[t.Name]
		if bits < 64 && (n < -(1<<(bits-1)) || n >= 1<<(bits-1)) {
			return parquet.Value{}, false
		}
		if bits == 64 {
			return parquet.Int64Value(n), true
		}
		return parquet.Int32Value(int32(n)), true
	case "float", "double":
		var f float64
		switch x := v.(type) {
		case float64:
			f = x
		case float32:
			f = float64(x)
		case json.Number:
			p, err := strconv.ParseFloat(string(x), 64)
			if err != nil {
				return parquet.Value{}, false
			}
			f = p
		case string:
			switch x {
			case "NaN":
				f = math.NaN()
			case "Infinity":
				f = math.Inf(1)
			case "-Infinity":
				f = math.Inf(-1)
			default:
				return parquet.Value{}, false
			}
		default:
			return parquet.Value{}, false
		}
		if t.Name == "float" {
			return parquet.FloatValue(float32(f)), true
		}
		return parquet.DoubleValue(f), true
	case "decimal":
		var d schema.Decimal
		switch x := v.(type) {
		case schema.Decimal:
			d = x
		case json.Number:
			p, err := actions.ParseDecimal(string(x), t.Precision, t.Scale)
			if err != nil {
				return parquet.Value{}, false
			}
			d = p
		default:
			return parquet.Value{}, false
		}
		return decimalValue(d, t)
	case "date":
		switch x := v.(type) {
		case schema.Date:
			return parquet.Int32Value(int32(x)), true
		case string:
			d, err := time.ParseInLocation("2006-01-02", x, time.UTC)
			if err != nil {
				return parquet.Value{}, false
			}
			return parquet.Int32Value(int32(schema.FloorDiv(d.Unix(), 86400))), true
		}
	case "timestamp":
		var us int64
		switch x := v.(type) {
		case schema.Timestamp:
			us = int64(x)
		case string:
			ts, err := time.Parse(time.RFC3339Nano, x)
			if err != nil {
				return parquet.Value{}, false
			}
			us = actions.TimeMicros(ts)
		default:
			return parquet.Value{}, false
		}
		return int96Value(us), true
	case "timestamp_ntz":
		switch x := v.(type) {
		case schema.TimestampNTZ:
			return parquet.Int64Value(int64(x)), true
		case string:
			ts, err := time.ParseInLocation("2006-01-02T15:04:05.999999999", x, time.UTC)
			if err != nil {
				return parquet.Value{}, false
			}
			return parquet.Int64Value(actions.TimeMicros(ts)), true
		}
	case "string":
		if s, ok := v.(string); ok {
			return parquet.ByteArrayValue([]byte(s)), true
		}
	case "binary":
		switch x := v.(type) {
		case []byte:
			return parquet.ByteArrayValue(x), true
		case string:
			return parquet.ByteArrayValue([]byte(x)), true
		}
	case "boolean":
		if x, ok := v.(bool); ok {
			return parquet.BooleanValue(x), true
		}
	}
	return parquet.Value{}, false
}

// decimalValue encodes d as LeafNode lays decimals out (INT32, INT64 or
// fixed-length two's complement by precision).
func decimalValue(d schema.Decimal, t *schema.DataType) (parquet.Value, bool) {
	u := d.Unscaled
	if d.Scale != t.Scale {
		return parquet.Value{}, false
	}
	switch {
	case t.Precision <= 9:
		if !u.IsInt64() || u.Int64() < math.MinInt32 || u.Int64() > math.MaxInt32 {
			return parquet.Value{}, false
		}
		return parquet.Int32Value(int32(u.Int64())), true
	case t.Precision <= 18:
		if !u.IsInt64() {
			return parquet.Value{}, false
		}
		return parquet.Int64Value(u.Int64()), true
	}
	w := delta.DecimalBytes(t.Precision)
	if u.BitLen() >= 8*w {
		return parquet.Value{}, false
	}
	return parquet.FixedLenByteArrayValue(delta.DecimalToBytes(new(big.Int).Set(u), w)), true
}

// int96Value encodes microseconds since the epoch as Spark's INT96
// timestamp: nanoseconds of the day, then the Julian day.
func int96Value(us int64) parquet.Value {
	const julianEpoch = 2440588
	days := schema.FloorDiv(us, 86_400_000_000)
	nanos := (us - days*86_400_000_000) * 1000
	return parquet.Int96Value(deprecated.Int96{uint32(uint64(nanos)), uint32(uint64(nanos) >> 32), uint32(days + julianEpoch)})
}

// statsJSON returns the JSON stats to write for a: its own string, or one
// rebuilt from the parsed statistics of a struct-only checkpoint.
func statsJSON(a *actions.Add) string {
	if a.Stats != "" || a.ParsedStats == nil {
		return a.Stats
	}
	b, err := json.Marshal(a.ParsedStats)
	if err != nil {
		return ""
	}
	return string(b)
}
