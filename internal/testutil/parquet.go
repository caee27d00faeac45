package testutil

import (
	"errors"
	"io"
	"os"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// OpenParquet opens a local parquet file with parquet-go directly (no Delta
// scan). The file closes when the test ends.
func OpenParquet(t testing.TB, path string) *parquet.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatalf("parquet %s: %v", path, err)
	}
	return pf
}

// EachRow calls fn with every row of f in physical order, reading with
// parquet-go directly; name names the file in a failure.
func EachRow(t testing.TB, f *parquet.File, name string, fn func(parquet.Row)) {
	t.Helper()
	buf := make([]parquet.Row, 256)
	for _, rg := range f.RowGroups() {
		rows := rg.Rows()
		for {
			n, err := rows.ReadRows(buf)
			for _, r := range buf[:n] {
				fn(r)
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rows.Close()
				t.Fatalf("read %s: %v", name, err)
			}
		}
		rows.Close()
	}
}
