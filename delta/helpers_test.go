package delta

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// eachLogLine calls fn with every non-blank line of a JSON commit file, read
// independently of the package's log code. It fails the test when the file
// cannot be read.
func eachLogLine(t testing.TB, path string, fn func(line []byte)) {
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

// logStrings returns, in order, the string field of every action of
// kind action in the commit (or JSON checkpoint) file path; empty strings
// are left out.
func logStrings(t testing.TB, path, action, field string) []string {
	t.Helper()
	var out []string
	eachLogLine(t, path, func(raw []byte) {
		var line map[string]map[string]json.RawMessage
		var s string
		if json.Unmarshal(raw, &line) == nil && json.Unmarshal(line[action][field], &s) == nil && s != "" {
			out = append(out, s)
		}
	})
	return out
}

// writeParquetFile writes rows with schema (and the writer options) to
// dir/name and returns the file's bytes.
func writeParquetFile(t testing.TB, dir, name string, schema *parquet.Schema, rows []parquet.Row, opts ...parquet.WriterOption) []byte {
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

// repetitionOf names a parquet node's repetition: required, optional or
// repeated.
func repetitionOf(n parquet.Node) string {
	switch {
	case n.Optional():
		return "optional"
	case n.Repeated():
		return "repeated"
	}
	return "required"
}

// scanJSON reads a scan to its end, batch rows at a time, and returns its
// rows decoded by dec (with the file's partition values pv) as canonical
// JSON lines. each, when not nil, sees every batch before it is decoded.
func scanJSON(t testing.TB, s *FileScan, dec *RowDecoder, pv map[string]any, batch int, each func([]parquet.Row)) []string {
	t.Helper()
	var out []string
	rows := make([]parquet.Row, batch)
	for {
		n, err := s.ReadRows(rows, nil)
		if each != nil {
			each(rows[:n])
		}
		for _, r := range rows[:n] {
			lr, derr := dec.Decode(r, pv)
			if derr != nil {
				t.Fatal(derr)
			}
			out = append(out, string(AppendJSON(nil, lr)))
		}
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// observeRows feeds every row of rows to c, buf at a time, and closes rows.
func observeRows(c *StatsCollector, rows parquet.Rows, buf []parquet.Row) {
	defer rows.Close()
	for {
		n, err := rows.ReadRows(buf)
		c.ObserveRows(buf[:n])
		if err != nil {
			return
		}
	}
}
