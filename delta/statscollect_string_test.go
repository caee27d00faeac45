package delta_test

import (
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta/internal/deltatest"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/props"
	deltaschema "github.com/compactord/compactord/delta/schema"
	"github.com/compactord/compactord/delta/statscollect"
	"github.com/parquet-go/parquet-go"
)

func TestTruncateStringMin(t *testing.T) {
	const emoji = "\U0001F600" // two UTF-16 units
	tests := []struct {
		name string
		in   string
		n    int
		want string
	}{
		{"short string kept", "abc", 5, "abc"},
		{"exact length kept", "abcde", 5, "abcde"},
		{"ascii cut", "abcdefgh", 5, "abcde"},
		{"multi-byte BMP characters count one unit each", "ééééééé", 3, "ééé"},
		{"a surrogate pair counts two units", "a" + emoji + "b", 3, "a" + emoji},
		{"a pair straddling the cut is dropped", "ab" + emoji + "c", 3, "ab"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := statscollect.TruncateStringMin(tc.in, tc.n); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTruncateStringMax(t *testing.T) {
	const (
		emoji = "\U0001F600"
		top   = "\U0010FFFF"
		del   = "\u007f"
	)
	tests := []struct {
		name string
		in   string
		n    int
		want string
		ok   bool
	}{
		{"short string kept", "abc", 5, "abc", true},
		{"exact length kept", "abcde", 5, "abcde", true},
		{"next char below U+007F gets U+007F", "abcdefgh", 5, "abcde" + del, true},
		{"next char U+007F gets U+10FFFF", "abcde" + del + "x", 5, "abcde" + top, true},
		{"next char above ASCII gets U+10FFFF", "abcdeéx", 5, "abcde" + top, true},
		{"next char a surrogate pair gets U+10FFFF", "abcde" + emoji, 5, "abcde" + top, true},
		{"a pair straddling the cut is not split", "abcd" + emoji + "z", 5, "abcd" + top, true},
		{"U+10FFFF after the prefix is skipped", "abcde" + top + "x", 5, "abcde" + top + del, true},
		{"a run of U+10FFFF is skipped", "abcd" + top + top + "é", 4, "abcd" + top + top + top, true},
		{"a run ending the string keeps the string", "abcd" + top + top, 4, "abcd" + top + top, true},
		{"gives up past twice the prefix", "ab" + top + top + top + "x", 2, "", false},
		{"skipping up to exactly twice the prefix still works", "ab" + top + "x", 2, "ab" + top + del, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := statscollect.TruncateStringMax(tc.in, tc.n)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("got %q %v, want %q %v", got, ok, tc.want, tc.ok)
			}
			if ok && got < tc.in {
				t.Fatalf("max %q sorts before the value %q", got, tc.in)
			}
		})
	}
}

func TestStatsStringBoundsInOutput(t *testing.T) {
	rows := []statsRow{
		{Name: statsPtr(strings.Repeat("m", 40))},
		{Name: statsPtr(strings.Repeat("\U0010FFFF", 70))},
	}
	got, err := collectStatsRows(t, map[string]string{props.PropStatsColumns: "name"}, rows, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The max is 70 U+10FFFF (140 units): the tie-break gives up, so only
	// the min is written.
	want := `{"numRecords":2,"minValues":{"name":"` + strings.Repeat("m", 32) + `"},"maxValues":{},"nullCount":{"name":0}}`
	if got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
}

func TestMarkStatsWide(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"numRecords":3,"minValues":{"a":1}}`, `{"numRecords":3,"minValues":{"a":1},"tightBounds":false}`},
		{`{"numRecords":3,"tightBounds":true,"nullCount":{"a":0}}`, `{"numRecords":3,"nullCount":{"a":0},"tightBounds":false}`},
		{`{"numRecords":3,"tightBounds":false}`, `{"numRecords":3,"tightBounds":false}`},
		{`{"numRecords":1,"maxValues":{"d":1.50}}`, `{"numRecords":1,"maxValues":{"d":1.50},"tightBounds":false}`},
		{`{}`, `{"tightBounds":false}`},
		{``, ``},
		{`not json`, `not json`},
	}
	for _, tc := range tests {
		if got := statscollect.MarkStatsWide(tc.in); got != tc.want {
			t.Errorf("MarkStatsWide(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestStatsObserveDoesNotAllocate(t *testing.T) {
	c, pq, err := statsTestCollector(t, "part", nil)
	if err != nil {
		t.Fatal(err)
	}
	src := statsTestRows()
	rows := make([]parquet.Row, len(src))
	for i := range src {
		rows[i] = pq.Deconstruct(nil, &src[i])
	}
	c.ObserveRows(rows) // warm the string buffers
	if n := testing.AllocsPerRun(100, func() { c.ObserveRows(rows) }); n != 0 {
		t.Fatalf("Observe allocates %.1f times per batch", n)
	}
}

func BenchmarkStatsCollectorObserve(b *testing.B) {
	c, pq, err := statsTestCollector(b, "part", nil)
	if err != nil {
		b.Fatal(err)
	}
	src := statsTestRows()
	rows := make([]parquet.Row, 0, 1024)
	for i := 0; i < 1024; i++ {
		r := src[i%len(src)]
		if r.ID != nil {
			r.ID = statsPtr(int64(i))
		}
		rows = append(rows, pq.Deconstruct(nil, &r))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.ObserveRows(rows)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rows)), "ns/row")
}

func TestStatsWideDecimalFromFixedLenBytes(t *testing.T) {
	const schemaJSON = `{"type":"struct","fields":[{"name":"d","type":"decimal(20,2)","nullable":true,"metadata":{}}]}`
	schema, err := deltaschema.ParseSchema(schemaJSON)
	if err != nil {
		t.Fatal(err)
	}
	pq := parquet.NewSchema("spark_schema", parquet.Group{
		"d": parquet.Optional(parquet.Decimal(2, 20, parquet.FixedLenByteArrayType(9))),
	})
	meta := &actions.Metadata{SchemaString: schemaJSON}
	c, err := statscollect.NewStatsCollector(meta, schema, pq)
	if err != nil {
		t.Fatal(err)
	}
	twos := func(v string) []byte {
		n, _ := new(big.Int).SetString(v, 10)
		if n.Sign() < 0 {
			n.Add(n, new(big.Int).Lsh(big.NewInt(1), 72))
		}
		b := make([]byte, 9)
		return n.FillBytes(b)
	}
	for _, unscaled := range []string{"5", "-1234567", "99999999999999999999", "-3"} {
		c.Observe(parquet.Row{parquet.FixedLenByteArrayValue(twos(unscaled)).Level(0, 1, 0)})
	}
	c.Observe(parquet.Row{parquet.NullValue().Level(0, 0, 0)})
	got, _ := c.Finish()
	want := `{"numRecords":5,"minValues":{"d":-12345.67},"maxValues":{"d":999999999999999999.99},"nullCount":{"d":1}}`
	if got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
}

func TestStatsTimestampUnitsAndNTZ(t *testing.T) {
	const schemaJSON = `{"type":"struct","fields":[
 {"name":"a_ms","type":"timestamp","nullable":true,"metadata":{}},
 {"name":"b_ns","type":"timestamp","nullable":true,"metadata":{}},
 {"name":"c_ntz","type":"timestamp_ntz","nullable":true,"metadata":{}},
 {"name":"d_day","type":"date","nullable":true,"metadata":{}}]}`
	schema, err := deltaschema.ParseSchema(schemaJSON)
	if err != nil {
		t.Fatal(err)
	}
	// parquet.Group orders fields by name, so the names sort in schema order.
	pq := parquet.NewSchema("spark_schema", parquet.Group{
		"a_ms":  parquet.Optional(parquet.Timestamp(parquet.Millisecond)),
		"b_ns":  parquet.Optional(parquet.Timestamp(parquet.Nanosecond)),
		"c_ntz": parquet.Optional(parquet.TimestampAdjusted(parquet.Microsecond, false)),
		"d_day": parquet.Optional(parquet.Date()),
	})
	c, err := statscollect.NewStatsCollector(&actions.Metadata{SchemaString: schemaJSON}, schema, pq)
	if err != nil {
		t.Fatal(err)
	}
	row := func(ms, ns, us int64, day int32) parquet.Row {
		return parquet.Row{
			parquet.Int64Value(ms).Level(0, 1, 0),
			parquet.Int64Value(ns).Level(0, 1, 1),
			parquet.Int64Value(us).Level(0, 1, 2),
			parquet.Int32Value(day).Level(0, 1, 3),
		}
	}
	c.Observe(row(1500, 4_000_500_000, 1_999_999, 0))
	c.Observe(row(-1, -1, -1, -1)) // just before the epoch: truncation floors
	got, _ := c.Finish()
	want := `{"numRecords":2,` +
		`"minValues":{"a_ms":"1969-12-31T23:59:59.999Z","b_ns":"1969-12-31T23:59:59.999Z","c_ntz":"1969-12-31T23:59:59.999","d_day":"1969-12-31"},` +
		`"maxValues":{"a_ms":"1970-01-01T00:00:01.500Z","b_ns":"1970-01-01T00:00:04.000Z","c_ntz":"1970-01-01T00:00:01.999","d_day":"1970-01-01"},` +
		`"nullCount":{"a_ms":0,"b_ns":0,"c_ntz":0,"d_day":0}}`
	if got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
}

// statsColumnFixture is a collector for statsRow rows and n rows of every
// shape statsRow has: nulls, negative and positive integers, long strings,
// repeated tags.
func statsColumnFixture(tb testing.TB, n int) (*statscollect.StatsCollector, *parquet.Schema, []parquet.Row) {
	c, pq, err := statsTestCollector(tb, "part", nil)
	if err != nil {
		tb.Fatal(err)
	}
	src := statsTestRows()
	rows := make([]parquet.Row, 0, n)
	for i := range n {
		r := src[i%len(src)]
		if r.ID != nil {
			r.ID = statsPtr(int64((i*7919)%1000 - 500))
		}
		if r.Name != nil && i%5 == 0 {
			r.Name = statsPtr(strings.Repeat(string(rune('a'+i%26)), 1+i%45))
		}
		rows = append(rows, pq.Deconstruct(nil, &r))
	}
	return c, pq, rows
}

// Observing a file's values column by column (as ReadColumn hands them
// over, and in batches mixing columns) gives the statistics observing its
// rows gives.
func TestStatsObserveValuesByColumnEqualsByRow(t *testing.T) {
	want, pq, rows := statsOfFixture(t, 500)
	cols := deltatest.ColumnsOfRows(rows, len(pq.Columns()))
	var mixed []parquet.Value
	for i := range rows[0] {
		mixed = append(mixed, rows[0][i], rows[1][len(rows[1])-1-i%len(rows[1])])
	}
	tests := []struct {
		name    string
		batches [][]parquet.Value
		records int64
	}{
		{name: "whole columns", batches: cols, records: int64(len(rows))},
		{name: "batches of 7 values", batches: slicesOf(cols, 7), records: int64(len(rows))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := statsTestCollector(t, "part", nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range tt.batches {
				c.ObserveValues(b)
			}
			c.AddRecords(tt.records)
			if got, err := c.Finish(); err != nil || got != want {
				t.Fatalf("by column: %s (%v)\nby row:    %s", got, err, want)
			}
		})
	}
	// A batch that mixes columns: value for value what Observe folds.
	a, _, _ := statsTestCollector(t, "part", nil)
	b, _, _ := statsTestCollector(t, "part", nil)
	a.ObserveValues(mixed)
	for i := range mixed {
		b.ObserveValues(mixed[i : i+1])
	}
	ga, _ := a.Finish()
	gb, _ := b.Finish()
	if ga != gb {
		t.Fatalf("mixed batch: %s\nvalue by value: %s", ga, gb)
	}
}

// Parts of a file observed by Fresh collectors (in the writer, one per row
// group, concurrently) and merged in any order give the statistics of
// observing the whole file, an empty part included.
func TestStatsMergedPartsEqualTheWhole(t *testing.T) {
	want, _, rows := statsOfFixture(t, 500)
	cuts := [][2]int{{0, 0}, {0, 120}, {120, 121}, {121, 500}}
	for _, order := range [][]int{{0, 1, 2, 3}, {3, 1, 0, 2}} {
		c, _, err := statsTestCollector(t, "part", nil)
		if err != nil {
			t.Fatal(err)
		}
		parts := make([]*statscollect.StatsCollector, len(cuts))
		for i, cut := range cuts {
			parts[i] = c.Fresh()
			parts[i].ObserveRows(rows[cut[0]:cut[1]])
		}
		for _, i := range order {
			c.Merge(parts[i])
		}
		if got, err := c.Finish(); err != nil || got != want {
			t.Fatalf("merged in order %v: %s (%v)\nwhole:              %s", order, got, err, want)
		}
		// One part merged into an empty collector is that part.
		for i, p := range parts {
			alone := c.Fresh()
			alone.Merge(p)
			got, err1 := alone.Finish()
			want, err2 := p.Finish()
			if err := errors.Join(err1, err2); err != nil || got != want {
				t.Fatalf("part %d merged alone: %s (%v)\nobserved:             %s", i, got, err, want)
			}
		}
	}
}

// statsOfFixture is the statistics of statsColumnFixture's n rows,
// observed row by row, with its schema and rows.
func statsOfFixture(t *testing.T, n int) (string, *parquet.Schema, []parquet.Row) {
	t.Helper()
	c, pq, rows := statsColumnFixture(t, n)
	c.ObserveRows(rows)
	want, err := c.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return want, pq, rows
}

// slicesOf cuts each column into batches of n values.
func slicesOf(cols [][]parquet.Value, n int) [][]parquet.Value {
	var out [][]parquet.Value
	for _, c := range cols {
		for len(c) > 0 {
			k := min(n, len(c))
			out = append(out, c[:k])
			c = c[k:]
		}
	}
	return out
}

func BenchmarkStatsCollectorObserveColumns(b *testing.B) {
	c, pq, rows := statsColumnFixture(b, 2048)
	cols := deltatest.ColumnsOfRows(rows, len(pq.Columns()))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, col := range cols {
			c.ObserveValues(col)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rows)), "ns/row")
}
