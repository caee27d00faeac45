package delta_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/delta/scan"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/internal/deltatest"
	"github.com/compactord/compactord/delta/props"
	deltaschema "github.com/compactord/compactord/delta/schema"
	"github.com/compactord/compactord/delta/statscollect"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/parquet-go/parquet-go"
)

// fixtureLog is what the stats tests need from a fixture table's log.
type fixtureLog struct {
	meta     *actions.Metadata
	protocol *actions.Protocol
	adds     []*actions.Add
}

func readFixtureLog(t *testing.T, root string) fixtureLog {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(root, "_delta_log", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(logs)
	var fl fixtureLog
	for _, lf := range logs {
		deltatest.EachLogLine(t, lf, func(line []byte) {
			a, err := actions.ParseAction(line)
			if err != nil {
				t.Fatalf("%s: %v", lf, err)
			}
			switch {
			case a.Metadata != nil:
				fl.meta = a.Metadata
			case a.Protocol != nil:
				fl.protocol = a.Protocol
			case a.Add != nil:
				fl.adds = append(fl.adds, a.Add)
			}
		})
	}
	return fl
}

// collectFileStats feeds every row of a data file to a fresh collector
// built on the file's own parquet schema.
func collectFileStats(t *testing.T, fl fixtureLog, path string) string {
	t.Helper()
	byRows, _ := collectFileStatsBoth(t, fl, path)
	return byRows
}

// collectFileStatsBoth computes a file's statistics from its rows (Observe)
// and column by column (ObserveRowGroup).
func collectFileStatsBoth(t *testing.T, fl fixtureLog, path string) (byRows, byColumns string) {
	t.Helper()
	pf := testutil.OpenParquet(t, path)
	c, err := statscollect.NewStatsCollector(fl.meta, nil, pf.Schema())
	if err != nil {
		t.Fatal(err)
	}
	if fl.protocol != nil {
		c.SetProtocol(*fl.protocol)
	}
	buf := make([]parquet.Row, 3)
	for _, rg := range pf.RowGroups() {
		observeRows(c, rg.Rows(), buf)
	}
	byRows, err = c.Finish()
	if err != nil {
		t.Fatal(err)
	}
	c.Reset()
	vals := make([]parquet.Value, 5) // small: values of a page span several reads
	for _, rg := range pf.RowGroups() {
		if err := c.ObserveRowGroup(rg, vals); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	byColumns, err = c.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return byRows, byColumns
}

// TestStatsByColumnEqualStatsByRow checks ObserveRowGroup against Observe
// on every data file of every fixture table (nested, repeated, nulls,
// every type, DV'd files, column mapping).
func TestStatsByColumnEqualStatsByRow(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(testutil.DeltaTestdata(t), "*", "delta"))
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, dir := range dirs {
		fl := readFixtureLog(t, dir)
		if fl.meta == nil {
			continue
		}
		seen := map[string]bool{}
		for _, add := range fl.adds {
			key, err := add.Key()
			if err != nil || seen[key] {
				continue
			}
			seen[key] = true
			path := filepath.Join(dir, filepath.FromSlash(key))
			if _, err := os.Stat(path); err != nil {
				continue // removed and vacuumed
			}
			rows, cols := collectFileStatsBoth(t, fl, path)
			if rows != cols {
				t.Errorf("%s:\n by rows    %s\n by columns %s", path, rows, cols)
			}
			files++
		}
	}
	if files < 100 {
		t.Fatalf("only %d files compared", files)
	}
	t.Logf("%d files compared", files)
}

// statsNotComparable lists fixture tables whose logged stats cannot equal
// stats computed from the data files with the latest metadata, and why.
var statsNotComparable = map[string]string{
	"dv-inline-cdf":              "hand-written log: tightBounds=false on adds without a DV",
	"part-timestamp-utc":         "hand-written log: DV feature on, but no tightBounds in the stats",
	"stats-parsed-in-checkpoint": "stats name ts_col, which the data files do not contain",
	"stats-struct-only-delta121": "files predate a schema change: stats lack the later new_column",
	"type-widening":              "stats were written at the narrow pre-widening types",
	"type-widening-nested":       "stats were written at the narrow pre-widening types",
	"ckpt-no-last-checkpoint":    "LOG-ONLY: data file absent",
	"catalog-managed-ict-staged": "negative case",
	"many-table-features":        "negative case",
}

// TestStatsMatchSparkOnFixtures recomputes the stats of every data file of
// every fixture table (adds that carry stats and no DV) and compares them
// with what the writer logged. The Spark-written reference tables
// (stats-writing-all-types, stats-all-types, stats-all-types-colmap-name)
// must be among those checked.
func TestStatsMatchSparkOnFixtures(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(testutil.DeltaTestdata(t), "*", "delta"))
	if err != nil {
		t.Fatal(err)
	}
	checkedTables := map[string]int{}
	for _, dir := range dirs {
		name := filepath.Base(filepath.Dir(dir))
		if why, skip := statsNotComparable[name]; skip {
			t.Logf("skip %s: %s", name, why)
			continue
		}
		t.Run(name, func(t *testing.T) {
			fl := readFixtureLog(t, dir)
			if fl.meta == nil {
				return // checkpoint-only logs: the JSON files hold no metadata
			}
			for _, add := range fl.adds {
				if add.Stats == "" || add.DeletionVector != nil {
					continue // a DV'd add's stats may be wide; the file's first add is checked
				}
				key, err := add.Key()
				if err != nil {
					t.Fatal(err)
				}
				got := collectFileStats(t, fl, filepath.Join(dir, filepath.FromSlash(key)))
				if diff := statsDiff(t, add.Stats, got); diff != "" {
					t.Errorf("%s: %s\n logged: %s\n   ours: %s", key, diff, add.Stats, got)
				}
				checkedTables[name]++
			}
		})
	}
	for _, must := range []string{"stats-writing-all-types", "stats-all-types", "stats-all-types-colmap-name", "stats-timestamp-truncation", "void-column", "dv-small", "dv-short-tightbounds-false"} {
		if checkedTables[must] == 0 {
			t.Errorf("no file of %s was checked", must)
		}
	}
	t.Logf("files checked per table: %v", checkedTables)
}

// statsDiff compares two stats JSON documents semantically: same keys,
// numbers equal as numbers, timestamps equal as instants, other strings
// equal. It returns "" when they agree.
func statsDiff(t *testing.T, want, got string) string {
	t.Helper()
	var w, g any
	dec := json.NewDecoder(strings.NewReader(want))
	dec.UseNumber()
	if err := dec.Decode(&w); err != nil {
		t.Fatalf("spark stats: %v", err)
	}
	dec = json.NewDecoder(strings.NewReader(got))
	dec.UseNumber()
	if err := dec.Decode(&g); err != nil {
		return fmt.Sprintf("our stats are not JSON: %v", err)
	}
	return jsonDiff("$", w, g)
}

func jsonDiff(at string, w, g any) string {
	switch wv := w.(type) {
	case map[string]any:
		gv, ok := g.(map[string]any)
		if !ok {
			return at + ": not an object"
		}
		for k := range wv {
			if _, ok := gv[k]; !ok {
				return at + "." + k + ": missing"
			}
		}
		for k := range gv {
			if _, ok := wv[k]; !ok {
				return at + "." + k + ": unexpected"
			}
		}
		keys := make([]string, 0, len(wv))
		for k := range wv {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if d := jsonDiff(at+"."+k, wv[k], gv[k]); d != "" {
				return d
			}
		}
		return ""
	case json.Number:
		gv, ok := g.(json.Number)
		if !ok {
			return at + ": not a number"
		}
		a, _, err1 := big.ParseFloat(string(wv), 10, 200, big.ToNearestEven)
		b, _, err2 := big.ParseFloat(string(gv), 10, 200, big.ToNearestEven)
		if err1 != nil || err2 != nil {
			return at + ": unparsable number"
		}
		if a.Cmp(b) != 0 {
			return fmt.Sprintf("%s: %s != %s", at, wv, gv)
		}
		return ""
	case string:
		gv, ok := g.(string)
		if !ok {
			return at + ": not a string"
		}
		if wv == gv {
			return ""
		}
		const layout = "2006-01-02T15:04:05.000Z07:00"
		ta, err1 := time.Parse(layout, wv)
		tb, err2 := time.Parse(layout, gv)
		if err1 == nil && err2 == nil && ta.Equal(tb) {
			return ""
		}
		return fmt.Sprintf("%s: %q != %q", at, wv, gv)
	default:
		if !reflect.DeepEqual(w, g) {
			return fmt.Sprintf("%s: %v != %v", at, w, g)
		}
		return ""
	}
}

type statsInner struct {
	A *int32  `parquet:"a,optional"`
	B *string `parquet:"b,optional"`
}

type statsRow struct {
	ID    *int64      `parquet:"id,optional"`
	Name  *string     `parquet:"name,optional"`
	Score *float64    `parquet:"score,optional"`
	Inner *statsInner `parquet:"inner,optional"`
	Tags  []string    `parquet:"tags,optional,list"`
	Flag  *bool       `parquet:"flag,optional"`
}

const statsTestSchema = `{"type":"struct","fields":[
 {"name":"id","type":"long","nullable":true,"metadata":{}},
 {"name":"part","type":"string","nullable":true,"metadata":{}},
 {"name":"name","type":"string","nullable":true,"metadata":{}},
 {"name":"score","type":"double","nullable":true,"metadata":{}},
 {"name":"inner","type":{"type":"struct","fields":[
   {"name":"a","type":"integer","nullable":true,"metadata":{}},
   {"name":"b","type":"string","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
 {"name":"tags","type":{"type":"array","elementType":"string","containsNull":true},"nullable":true,"metadata":{}},
 {"name":"flag","type":"boolean","nullable":true,"metadata":{}},
 {"name":"extra","type":"long","nullable":true,"metadata":{}}]}`

func statsPtr[T any](v T) *T { return &v }

func statsTestRows() []statsRow {
	return []statsRow{
		{ID: statsPtr(int64(7)), Name: statsPtr("b"), Score: statsPtr(1.5), Inner: &statsInner{A: statsPtr(int32(5)), B: statsPtr("x")}, Tags: []string{"t"}, Flag: statsPtr(true)},
		{ID: statsPtr(int64(-3)), Name: statsPtr(strings.Repeat("a", 40)), Score: statsPtr(-2.25), Inner: &statsInner{A: statsPtr(int32(-1))}, Tags: []string{}, Flag: statsPtr(false)},
		{Inner: nil},
	}
}

// statsTestCollector is a collector for statsRow rows (statsTestSchema),
// partitioned by part, with the table configuration conf.
func statsTestCollector(tb testing.TB, part string, conf map[string]string) (*statscollect.StatsCollector, *parquet.Schema, error) {
	tb.Helper()
	schema, err := deltaschema.ParseSchema(statsTestSchema)
	if err != nil {
		tb.Fatal(err)
	}
	meta := &actions.Metadata{SchemaString: statsTestSchema, PartitionColumns: []string{part}, Configuration: conf}
	pq := parquet.SchemaOf(statsRow{})
	c, err := statscollect.NewStatsCollector(meta, schema, pq)
	return c, pq, err
}

func collectStatsRows(t *testing.T, conf map[string]string, rows []statsRow, protocol *actions.Protocol) (string, error) {
	t.Helper()
	c, pq, err := statsTestCollector(t, "Part", conf)
	if err != nil {
		return "", err
	}
	if protocol != nil {
		c.SetProtocol(*protocol)
	}
	for i := range rows {
		c.Observe(pq.Deconstruct(nil, &rows[i]))
	}
	return c.Finish()
}

func TestStatsCollectorRules(t *testing.T) {
	tests := []struct {
		name     string
		conf     map[string]string
		rows     []statsRow
		protocol *actions.Protocol
		want     string
	}{
		{
			name: "all columns by default; partition excluded, absent column all null, arrays and booleans null count only",
			rows: statsTestRows(),
			want: `{"numRecords":3,` +
				`"minValues":{"id":-3,"name":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","score":-2.25,"inner":{"a":-1,"b":"x"}},` +
				`"maxValues":{"id":7,"name":"b","score":1.5,"inner":{"a":5,"b":"x"}},` +
				`"nullCount":{"id":1,"name":1,"score":1,"inner":{"a":1,"b":2},"tags":1,"flag":1,"extra":3}}`,
		},
		{
			name: "numIndexedCols counts nested leaves",
			conf: map[string]string{props.PropNumIndexedCols: "4"},
			rows: statsTestRows(),
			want: `{"numRecords":3,"minValues":{"id":-3,"name":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","score":-2.25,"inner":{"a":-1}},` +
				`"maxValues":{"id":7,"name":"b","score":1.5,"inner":{"a":5}},"nullCount":{"id":1,"name":1,"score":1,"inner":{"a":1}}}`,
		},
		{
			name: "numIndexedCols 0 leaves only numRecords",
			conf: map[string]string{props.PropNumIndexedCols: "0"},
			rows: statsTestRows(),
			want: `{"numRecords":3}`,
		},
		{
			name: "statsColumns wins over numIndexedCols, case-insensitive, schema order",
			conf: map[string]string{props.PropNumIndexedCols: "1", props.PropStatsColumns: "TAGS, `inner`.B,id"},
			rows: statsTestRows(),
			want: `{"numRecords":3,"minValues":{"id":-3,"inner":{"b":"x"}},"maxValues":{"id":7,"inner":{"b":"x"}},` +
				`"nullCount":{"id":1,"inner":{"b":2},"tags":1}}`,
		},
		{
			name: "string prefix length from the table",
			conf: map[string]string{props.PropStringPrefixLength: "3", props.PropStatsColumns: "name"},
			rows: statsTestRows(),
			want: `{"numRecords":3,"minValues":{"name":"aaa"},"maxValues":{"name":"b"},"nullCount":{"name":1}}`,
		},
		{
			name: "NaN drops min and max of that column only",
			conf: map[string]string{props.PropStatsColumns: "score,id"},
			rows: append(statsTestRows(), statsRow{ID: statsPtr(int64(0)), Score: statsPtr(math.NaN())}),
			want: `{"numRecords":4,"minValues":{"id":-3},"maxValues":{"id":7},"nullCount":{"id":1,"score":1}}`,
		},
		{
			name: "all-null columns keep an object without bounds",
			conf: map[string]string{props.PropStatsColumns: "inner"},
			rows: []statsRow{{}, {}},
			want: `{"numRecords":2,"minValues":{"inner":{}},"maxValues":{"inner":{}},"nullCount":{"inner":{"a":2,"b":2}}}`,
		},
		{
			name:     "tightBounds when the protocol supports deletion vectors",
			conf:     map[string]string{props.PropStatsColumns: "id"},
			rows:     statsTestRows()[:1],
			protocol: &actions.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors"}},
			want:     `{"numRecords":1,"minValues":{"id":7},"maxValues":{"id":7},"nullCount":{"id":0},"tightBounds":true}`,
		},
		{
			name:     "no tightBounds without deletion vectors",
			conf:     map[string]string{props.PropStatsColumns: "id"},
			rows:     statsTestRows()[:1],
			protocol: &actions.Protocol{MinReaderVersion: 1, MinWriterVersion: 2},
			want:     `{"numRecords":1,"minValues":{"id":7},"maxValues":{"id":7},"nullCount":{"id":0}}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := collectStatsRows(t, tc.conf, tc.rows, tc.protocol)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestStatsCollectorRejectsBadConfig(t *testing.T) {
	for _, conf := range []map[string]string{
		{props.PropNumIndexedCols: "many"},
		{props.PropNumIndexedCols: "-2"},
		{props.PropStringPrefixLength: "0"},
		{props.PropStatsColumns: "`unterminated"},
		{props.PropStatsColumns: "a,,b"},
	} {
		if _, err := collectStatsRows(t, conf, nil, nil); err == nil {
			t.Errorf("%v accepted", conf)
		}
	}
}

func TestStatsCollectorReset(t *testing.T) {
	c, pq, err := statsTestCollector(t, "part", map[string]string{props.PropStatsColumns: "id,name"})
	if err != nil {
		t.Fatal(err)
	}
	rows := statsTestRows()
	c.Observe(pq.Deconstruct(nil, &rows[1]))
	c.Reset()
	c.Observe(pq.Deconstruct(nil, &rows[0]))
	got, _ := c.Finish()
	want := `{"numRecords":1,"minValues":{"id":7,"name":"b"},"maxValues":{"id":7,"name":"b"},"nullCount":{"id":0,"name":0}}`
	if got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
}

// TestStatsOnWriteSchema builds the collector on the parquet schema
// compactord writes (DataSchemaOf) instead of the file's own, and feeds it
// the rows of Spark's file: both schemas have the same columns in the same
// order, so the stats must still equal Spark's.
func TestStatsOnWriteSchema(t *testing.T) {
	for _, name := range []string{"stats-writing-all-types", "stats-all-types-colmap-name", "cm-name-partitioned-all-types"} {
		t.Run(name, func(t *testing.T) {
			root := testutil.DeltaTable(t, name)
			fl := readFixtureLog(t, root)
			schema, err := deltaschema.ParseSchema(fl.meta.SchemaString)
			if err != nil {
				t.Fatal(err)
			}
			pq, err := scan.DataSchemaOf(schema, fl.meta)
			if err != nil {
				t.Fatal(err)
			}
			for _, add := range fl.adds {
				key, _ := add.Key()
				pf := testutil.OpenParquet(t, filepath.Join(root, filepath.FromSlash(key)))
				if !reflect.DeepEqual(pf.Schema().Columns(), pq.Columns()) {
					t.Fatalf("column paths differ:\nfile  %v\nwrite %v", pf.Schema().Columns(), pq.Columns())
				}
				c, err := statscollect.NewStatsCollector(fl.meta, schema, pq)
				if err != nil {
					t.Fatal(err)
				}
				c.SetProtocol(*fl.protocol)
				observeRows(c, pf.RowGroups()[0].Rows(), make([]parquet.Row, 16))
				got, _ := c.Finish()
				if diff := statsDiff(t, add.Stats, got); diff != "" {
					t.Errorf("%s: %s\n logged: %s\n   ours: %s", key, diff, add.Stats, got)
				}
			}
		})
	}
}

// observeRows feeds every row of rows to c, buf at a time, and closes rows.
func observeRows(c *statscollect.StatsCollector, rows parquet.Rows, buf []parquet.Row) {
	defer rows.Close()
	for {
		n, err := rows.ReadRows(buf)
		c.ObserveRows(buf[:n])
		if err != nil {
			return
		}
	}
}
