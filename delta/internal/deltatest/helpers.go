package deltatest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// EachLogLine calls fn with every non-blank line of a JSON commit file, read
// independently of the package's log code. It fails the test when the file
// cannot be read.
func EachLogLine(t testing.TB, path string, fn func(line []byte)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
			fn(line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// LogStrings returns, in order, the string field of every action of
// kind action in the commit (or JSON checkpoint) file path; empty strings
// are left out.
func LogStrings(t testing.TB, path, action, field string) []string {
	t.Helper()
	var out []string
	EachLogLine(t, path, func(raw []byte) {
		var line map[string]map[string]json.RawMessage
		var s string
		if json.Unmarshal(raw, &line) == nil && json.Unmarshal(line[action][field], &s) == nil && s != "" {
			out = append(out, s)
		}
	})
	return out
}

// WriteParquetFile writes rows with schema (and the writer options) to
// dir/name and returns the file's bytes.
func WriteParquetFile(t testing.TB, dir, name string, schema *parquet.Schema, rows []parquet.Row, opts ...parquet.WriterOption) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewWriter(&buf, append([]parquet.WriterOption{schema}, opts...)...)
	if _, err := w.WriteRows(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// RepetitionOf names a parquet node's repetition: required, optional or
// repeated.
func RepetitionOf(n parquet.Node) string {
	switch {
	case n.Optional():
		return "optional"
	case n.Repeated():
		return "repeated"
	}
	return "required"
}

// SchemaStringsInLog returns every metaData.schemaString found in the JSON
// commits of a test table, read independently of the log replay code.
func SchemaStringsInLog(t testing.TB, root string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, "_delta_log", "*.json"))
	sort.Strings(files)
	var out []string
	for _, p := range files {
		out = append(out, LogStrings(t, p, "metaData", "schemaString")...)
	}
	return out
}

// ColumnsOfRows splits rows into the values of each column, in row order.
func ColumnsOfRows(rows []parquet.Row, ncols int) [][]parquet.Value {
	cols := make([][]parquet.Value, ncols)
	for _, r := range rows {
		for c, vals := range r.Range {
			for _, v := range vals {
				cols[c] = append(cols[c], v.Clone())
			}
		}
	}
	return cols
}
