package storetest

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"gocloud.dev/blob"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/internal/tabletest"
	"github.com/compactord/compactord/internal/testutil"
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
	s, err := delta.OpenFileScan(context.Background(), tbl, snap, f, delta.ScanOptions{})
	if err != nil {
		t.Fatalf("scan %s in %s: %v", f.Path, tbl.URL, err)
	}
	defer s.Close()
	prefix := partitionText(f.PartitionValues)
	var out []string
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
			out = append(out, b.String())
			if physIdx != nil {
				*physIdx = append(*physIdx, idx[i])
			}
		}
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("scan %s in %s: %v", f.Path, tbl.URL, err)
		}
	}
}

func partitionText(pv map[string]*string) string {
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
		if !strings.HasPrefix(k, delta.LogDir) && !strings.HasPrefix(k, "_compactord/") {
			keys = append(keys, k)
		}
	}
	return keys
}

// TableLoad copies a Spark-written table (DVs, partitions, a classic
// checkpoint) into the store and checks the snapshot against the known
// answers and, row by row, against the same table read from local disk.
func TableLoad(t *testing.T, url string) {
	const name = "dv-partitioned-with-checkpoint"
	tbl := Open(t, url)
	src := testutil.DeltaTable(t, name)
	CopyTable(t, src, tbl)
	snap, rows := LiveRows(t, tbl)
	want, ok := testutil.ExpectedTables(t)[name]
	if !ok {
		t.Fatalf("expected.json has no entry %q", name)
	}
	if snap.Version != want.Version || len(snap.Files) != want.LiveFiles || int64(rows.Total()) != want.LiveRows {
		t.Fatalf("%s on %s: version %d, %d files, %d rows; want %d, %d, %d", name, url,
			snap.Version, len(snap.Files), rows.Total(), want.Version, want.LiveFiles, want.LiveRows)
	}
	local := Open(t, src)
	_, localRows := LiveRows(t, local)
	if lost, extra := rows.Diff(localRows); len(lost)+len(extra) > 0 {
		t.Fatalf("rows read from %s differ from local disk: lost %v, extra %v", url, lost, extra)
	}
}
