package writer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/schema"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/testutil"
)

// duckFile is one line of tools/duckcheck/check.mjs output.
type duckFile struct {
	File    string `json:"file"`
	Rows    int64  `json:"rows"`
	Columns []struct {
		Name string `json:"name"`
		Type string `json:"type"`
	} `json:"columns"`
	Leaves []struct {
		Path  []string `json:"path"`
		Type  string   `json:"type"`
		Nulls int64    `json:"nulls"`
		Min   *string  `json:"min"`
		Max   *string  `json:"max"`
	} `json:"leaves"`
}

// duckCheck runs DuckDB over files. It skips the test when the npm package
// is not installed, except under CI where that is a failure.
func duckCheck(t *testing.T, files []string) map[string]duckFile {
	t.Helper()
	node, script := testutil.DuckScript(t, "check.mjs")
	cmd := exec.Command(node, append([]string{script}, files...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("duckdb check: %v\n%s", err, stderr.String())
	}
	res := map[string]duckFile{}
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var f duckFile
		if err := json.Unmarshal(line, &f); err != nil {
			t.Fatalf("duckdb check output %q: %v", line, err)
		}
		res[f.File] = f
	}
	if len(res) != len(files) {
		t.Fatalf("duckdb checked %d files, want %d", len(res), len(files))
	}
	return res
}

func TestOutputsAgreeWithDuckDB(t *testing.T) {
	tables := readableTables(t)
	names := make([]string, 0, len(tables))
	for n := range tables {
		if _, refused := rewriteRefusals[n]; !refused {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	type written struct {
		table string
		snap  *delta.Snapshot
		out   Output
	}
	var all []written
	var files []string
	ctx := context.Background()
	for _, name := range names {
		tbl, dir := copyTable(t, name)
		snap, err := loadLatest(ctx, tbl)
		if err != nil {
			t.Fatalf("%s: load snapshot: %v", name, err)
		}
		objs := &attempt.Objects{}
		results, err := RewriteAll(ctx, tbl, snap, partitionJobs(snap), objs, DefaultOptions())
		if err != nil {
			t.Fatalf("%s: rewrite: %v", name, err)
		}
		for _, res := range results {
			for _, o := range res.Outputs {
				all = append(all, written{name, snap, o})
				files = append(files, filepath.Join(dir, filepath.FromSlash(o.Key)))
			}
		}
	}
	duck := duckCheck(t, files)
	for i, w := range all {
		t.Run(w.table+"/"+filepath.Base(w.out.Key), func(t *testing.T) {
			checkDuckStats(t, w.snap, w.out, duck[files[i]])
		})
	}
}

// checkDuckStats holds an output's Delta statistics to what DuckDB reads
// from it: row count, null counts, exact or truncated bounds.
func checkDuckStats(t *testing.T, snap *delta.Snapshot, out Output, d duckFile) {
	t.Helper()
	var st struct {
		NumRecords int64          `json:"numRecords"`
		MinValues  map[string]any `json:"minValues"`
		MaxValues  map[string]any `json:"maxValues"`
		NullCount  map[string]any `json:"nullCount"`
	}
	dec := json.NewDecoder(strings.NewReader(out.Add.Stats))
	dec.UseNumber()
	if err := dec.Decode(&st); err != nil {
		t.Fatalf("stats %q: %v", out.Add.Stats, err)
	}
	if d.Rows != st.NumRecords || d.Rows != out.NumRecords {
		t.Errorf("DuckDB counts %d rows, stats numRecords %d, writer %d", d.Rows, st.NumRecords, out.NumRecords)
	}
	checkDuckTypes(t, snap, d)
	conf := snap.Metadata.Configuration
	materialized := map[string]bool{
		conf["delta.rowTracking.materializedRowIdColumnName"]:            conf["delta.enableRowTracking"] == "true",
		conf["delta.rowTracking.materializedRowCommitVersionColumnName"]: conf["delta.enableRowTracking"] == "true",
	}
	_, hasCols := conf["delta.dataSkippingStatsColumns"]
	_, hasNum := conf["delta.dataSkippingNumIndexedCols"]
	for li, l := range d.Leaves {
		nc, ok := lookup(st.NullCount, l.Path)
		if !ok {
			// The materialized row tracking columns are not in the
			// table schema, so they have no stats (as in Spark).
			if li < 32 && !hasCols && !hasNum && !materialized[l.Path[0]] {
				t.Errorf("%v: no nullCount in stats, but it is among the first 32 leaves", l.Path)
			}
			continue
		}
		if n, err := strconv.ParseInt(fmt.Sprint(nc), 10, 64); err != nil || n != l.Nulls {
			t.Errorf("%v: stats nullCount %v, DuckDB counts %d nulls", l.Path, nc, l.Nulls)
		}
		smin, hasMin := lookup(st.MinValues, l.Path)
		smax, hasMax := lookup(st.MaxValues, l.Path)
		if l.Min == nil {
			if hasMin || hasMax {
				if l.Nulls != d.Rows || (smin != nil || smax != nil) {
					t.Errorf("%v (%s): stats min/max %v/%v but DuckDB has none", l.Path, l.Type, smin, smax)
				}
			}
			continue
		}
		if !hasMin || !hasMax {
			if minMaxType(l.Type) {
				t.Errorf("%v (%s): stats have no min/max; DuckDB min %s max %s", l.Path, l.Type, *l.Min, *l.Max)
			}
			continue
		}
		if err := agree(l.Type, smin, *l.Min, false); err != nil {
			t.Errorf("%v min: %v", l.Path, err)
		}
		if err := agree(l.Type, smax, *l.Max, true); err != nil {
			t.Errorf("%v max: %v", l.Path, err)
		}
	}
}

// minMaxType reports whether Delta keeps min/max for a DuckDB column type.
func minMaxType(duckType string) bool {
	switch {
	case duckType == "BOOLEAN", duckType == "BLOB", strings.HasSuffix(duckType, "[]"), strings.HasPrefix(duckType, "MAP("):
		return false
	}
	return true
}

func lookup(m map[string]any, path []string) (any, bool) {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// agree compares one stats bound with DuckDB's exact min or max.
func agree(duckType string, stat any, duck string, isMax bool) error {
	s := fmt.Sprint(stat)
	switch {
	case duckType == "TINYINT", duckType == "SMALLINT", duckType == "INTEGER", duckType == "BIGINT":
		if s != duck {
			return fmt.Errorf("stats %s, DuckDB %s", s, duck)
		}
	case duckType == "FLOAT", duckType == "DOUBLE":
		a, err1 := strconv.ParseFloat(s, 64)
		b, err2 := strconv.ParseFloat(duck, 64)
		same := a == b || (duckType == "FLOAT" && float32(a) == float32(b)) || (math.IsNaN(a) && math.IsNaN(b))
		if err1 != nil || err2 != nil || !same {
			return fmt.Errorf("stats %s, DuckDB %s", s, duck)
		}
	case strings.HasPrefix(duckType, "DECIMAL"):
		a, ok1 := new(big.Rat).SetString(s)
		b, ok2 := new(big.Rat).SetString(duck)
		if !ok1 || !ok2 || a.Cmp(b) != 0 {
			return fmt.Errorf("stats %s, DuckDB %s", s, duck)
		}
	case duckType == "DATE":
		if s != duck {
			return fmt.Errorf("stats %s, DuckDB %s", s, duck)
		}
	case strings.HasPrefix(duckType, "TIMESTAMP"):
		us, err := strconv.ParseInt(duck, 10, 64)
		if err != nil {
			return err
		}
		layouts := []string{"2006-01-02T15:04:05.000Z07:00", "2006-01-02T15:04:05.000"}
		var ts time.Time
		for _, l := range layouts {
			if ts, err = time.Parse(l, s); err == nil {
				break
			}
		}
		if err != nil {
			return fmt.Errorf("stats timestamp %q: %v", s, err)
		}
		ms := us / 1000
		if us%1000 < 0 {
			ms--
		}
		if ts.UnixMilli() != ms {
			return fmt.Errorf("stats %s (%d ms), DuckDB %d us: want the value truncated to ms", s, ts.UnixMilli(), us)
		}
	case duckType == "VARCHAR":
		if s == duck {
			return nil
		}
		units := len(utf16.Encode([]rune(s)))
		if !isMax {
			if !strings.HasPrefix(duck, s) || units < 32 {
				return fmt.Errorf("stats %q is not DuckDB's %q or its 32-unit prefix", s, duck)
			}
			return nil
		}
		if s < duck || units < 32 {
			return fmt.Errorf("stats max %q does not bound DuckDB's %q", s, duck)
		}
	default:
		return fmt.Errorf("unexpected min/max on type %s", duckType)
	}
	return nil
}

// checkDuckTypes compares DuckDB's column names and types with the table
// schema (data columns, physical names).
func checkDuckTypes(t *testing.T, snap *delta.Snapshot, d duckFile) {
	t.Helper()
	mode, err := actions.ColumnMappingMode(&snap.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	part := map[string]bool{}
	for _, c := range snap.Metadata.PartitionColumns {
		part[strings.ToLower(c)] = true
	}
	var want []string
	for _, f := range snap.Schema.Fields {
		if part[strings.ToLower(f.Name)] || f.Type.Name == "void" {
			continue
		}
		want = append(want, fieldName(f, mode)+" "+duckType(f.Type, mode))
	}
	// Row tracking tables: the materialized columns follow, outside the
	// table schema.
	if rt, err := delta.RowTrackingOf(snap); err != nil {
		t.Fatal(err)
	} else if rt.Materialize() {
		want = append(want, rt.RowIDColumn+" BIGINT", rt.RowCommitVersionColumn+" BIGINT")
	}
	var got []string
	for _, c := range d.Columns {
		got = append(got, c.Name+" "+c.Type)
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("DuckDB columns\n  %s\nwant\n  %s", strings.Join(got, ", "), strings.Join(want, ", "))
	}
}

func fieldName(f *schema.StructField, mode string) string {
	if mode == "none" {
		return f.Name
	}
	return schema.PhysicalName(f)
}

// duckType renders the DuckDB type a Delta type reads as.
func duckType(dt *schema.DataType, mode string) string {
	switch {
	case dt.Struct != nil:
		parts := make([]string, 0, len(dt.Struct.Fields))
		for _, f := range dt.Struct.Fields {
			if f.Type.Name == "void" {
				continue
			}
			parts = append(parts, strconv.Quote(fieldName(f, mode))+" "+duckType(f.Type, mode))
		}
		return "STRUCT(" + strings.Join(parts, ", ") + ")"
	case dt.ElementType != nil:
		return duckType(dt.ElementType, mode) + "[]"
	case dt.KeyType != nil:
		return "MAP(" + duckType(dt.KeyType, mode) + ", " + duckType(dt.ValueType, mode) + ")"
	}
	switch dt.Name {
	case "byte":
		return "TINYINT"
	case "short":
		return "SMALLINT"
	case "integer":
		return "INTEGER"
	case "long":
		return "BIGINT"
	case "float":
		return "FLOAT"
	case "double":
		return "DOUBLE"
	case "string":
		return "VARCHAR"
	case "binary":
		return "BLOB"
	case "boolean":
		return "BOOLEAN"
	case "date":
		return "DATE"
	case "timestamp":
		return "TIMESTAMP WITH TIME ZONE"
	case "timestamp_ntz":
		return "TIMESTAMP"
	}
	if dt.Precision > 0 {
		return fmt.Sprintf("DECIMAL(%d,%d)", dt.Precision, dt.Scale)
	}
	return strings.ToUpper(dt.Name)
}
