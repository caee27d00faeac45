package stores

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	deltascan "github.com/compactord/compactord/delta/scan"

	"github.com/parquet-go/parquet-go"
	"gocloud.dev/blob"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

// CopyTable uploads every file of the local table directory src into tbl,
// keeping relative keys ("_delta_log/...", "part=1/part-...parquet").
func CopyTable(t testing.TB, src string, tbl *delta.Table) {
	t.Helper()
	ctx := context.Background()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return tbl.Bucket.WriteAll(ctx, filepath.ToSlash(rel), data, &blob.WriterOptions{ContentType: "application/octet-stream"})
	})
	if err != nil {
		t.Fatalf("copy %s into %s: %v", src, tbl.URL, err)
	}
}

// Rows is a multiset of rows: a canonical text of each row (partition
// values, then column values) to its multiplicity.
type Rows map[string]int

// Total is the number of rows counted with multiplicity.
func (r Rows) Total() int {
	n := 0
	for _, c := range r {
		n += c
	}
	return n
}

// Diff describes how got differs from want: rows lost and rows that
// appeared (resurrected or invented).
func (r Rows) Diff(want Rows) (lost, extra []string) {
	for k, c := range want {
		if d := c - r[k]; d > 0 {
			for i := 0; i < d; i++ {
				lost = append(lost, k)
			}
		}
	}
	for k, c := range r {
		if d := c - want[k]; d > 0 {
			for i := 0; i < d; i++ {
				extra = append(extra, k)
			}
		}
	}
	sort.Strings(lost)
	sort.Strings(extra)
	return lost, extra
}

// LiveRows loads the latest snapshot of tbl and reads every live row.
func LiveRows(t testing.TB, tbl *delta.Table) (*delta.Snapshot, Rows) {
	t.Helper()
	ctx := context.Background()
	snap, err := delta.LoadSnapshot(ctx, tbl, -1)
	if err != nil {
		t.Fatalf("load %s: %v", tbl.URL, err)
	}
	rows := Rows{}
	for _, f := range snap.Files {
		for _, r := range FileRows(t, tbl, snap, f, nil) {
			rows[r]++
		}
	}
	return snap, rows
}

// FileRows reads the live rows of one file as canonical text; when physIdx
// is non-nil it receives each row's physical index.
func FileRows(t testing.TB, tbl *delta.Table, snap *delta.Snapshot, f *actions.Add, physIdx *[]int64) []string {
	t.Helper()
	var out []string
	err := ScanFileRows(context.Background(), tbl, snap, f, func(row string, phys int64) {
		out = append(out, row)
		if physIdx != nil {
			*physIdx = append(*physIdx, phys)
		}
	})
	if err != nil {
		t.Fatalf("in %s: %v", tbl.URL, err)
	}
	return out
}

// ScanFileRows calls fn with each live row of one file as canonical text
// (PartitionText, then "|value" per column, NULL for a null) and its
// physical index; the error names the file.
func ScanFileRows(ctx context.Context, tbl *delta.Table, snap *delta.Snapshot, f *actions.Add, fn func(row string, phys int64)) error {
	s, err := deltascan.OpenFileScan(ctx, tbl, snap, f, deltascan.ScanOptions{})
	if err != nil {
		return fmt.Errorf("scan %s: %w", f.Path, err)
	}
	defer s.Close()
	prefix := PartitionText(f.PartitionValues)
	buf := make([]parquet.Row, 64)
	idx := make([]int64, 64)
	for {
		n, err := s.ReadRows(buf, idx)
		for i, r := range buf[:n] {
			var b strings.Builder
			b.WriteString(prefix)
			for _, v := range r {
				b.WriteString("|")
				if v.IsNull() {
					b.WriteString("NULL")
				} else {
					b.WriteString(v.String())
				}
			}
			fn(b.String(), idx[i])
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("scan %s: %w", f.Path, err)
		}
	}
}

// PartitionText is a file's partition values as one comparable string
// (sorted "k=v;" pairs, NULL for a null value), the prefix of FileRows' rows.
func PartitionText(pv map[string]*string) string {
	keys := make([]string, 0, len(pv))
	for k := range pv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		v := "NULL"
		if pv[k] != nil {
			v = *pv[k]
		}
		b.WriteString(k + "=" + v + ";")
	}
	return b.String()
}

// DataObjects lists the keys of tbl outside "_delta_log/" and
// "_compactord/" (data files and DV files).
func DataObjects(t testing.TB, tbl *delta.Table) []string {
	t.Helper()
	var keys []string
	for _, k := range tabletest.Keys(t, tbl) {
		if !strings.HasPrefix(k, logpath.LogDir) && !strings.HasPrefix(k, "_compactord/") {
			keys = append(keys, k)
		}
	}
	return keys
}

// Open opens url (creating a local table directory that does not exist yet)
// and closes it at the end of the test.
func Open(t testing.TB, url string) *delta.Table {
	t.Helper()
	tbl, err := delta.CreateTable(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tbl.Close(); err != nil {
			t.Error(err)
		}
	})
	return tbl
}

// OpenN returns n handles on url, each with its own client as separate
// processes would have, except for mem:// whose data lives in one handle.
func OpenN(t testing.TB, url string, n int) []*delta.Table {
	t.Helper()
	out := make([]*delta.Table, n)
	for i := range out {
		if i > 0 && strings.HasPrefix(url, "mem://") {
			out[i] = out[0]
			continue
		}
		out[i] = Open(t, url)
	}
	return out
}
