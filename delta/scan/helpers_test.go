package scan

import (
	"errors"
	"io"
	"testing"

	"github.com/compactord/compactord/delta/schema"
	"github.com/parquet-go/parquet-go"
)

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
			out = append(out, string(schema.AppendJSON(nil, lr)))
		}
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
