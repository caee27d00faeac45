package vacuum

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

// TestLiteVacuumOf100kExpiredTombstonesListsNoDataDirectory writes 100,000
// files in 100 partition directories, commits them, removes them all 8
// days later, and runs a lite vacuum through a counting wrapper around the
// real (in-memory) store: every file goes, and the only LISTs are of
// _delta_log/ and _compactord/. (5,000 files under -race or -short.)
func TestLiteVacuumOf100kExpiredTombstonesListsNoDataDirectory(t *testing.T) {
	n := 100_000
	if testing.Short() || raceEnabled {
		n = 5_000
	}
	ctx := context.Background()
	real, err := delta.OpenTable(ctx, "mem://lite-100k")
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	counter, counted := newCountingStore(real.Bucket)
	tbl := &delta.Table{URL: real.URL, Bucket: counted, Log: real.Log}
	created := time.Now().Add(-10 * 24 * time.Hour).UnixMilli()
	put := func(v int64, lines []string) { tabletest.PutCommit(t, real, v, lines) }
	put(0, []string{
		`{"commitInfo":{"operation":"CREATE TABLE"}}`,
		`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}`,
		fmt.Sprintf(`{"metaData":{"id":"t","format":{"provider":"parquet","options":{}},"schemaString":%q,"partitionColumns":["p"],"configuration":{},"createdTime":1}}`,
			strings.Replace(tabletest.Schema, `"fields":[`, `"fields":[{"name":"p","type":"integer","nullable":true,"metadata":{}},`, 1)),
	})
	const perCommit = 1000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("p=%d/part-%06d.parquet", i%100, i)
		if err := real.Bucket.WriteAll(ctx, keys[i], []byte("data"), nil); err != nil {
			t.Fatal(err)
		}
	}
	v := int64(1)
	for lo := 0; lo < n; lo += perCommit {
		lines := []string{`{"commitInfo":{"operation":"WRITE"}}`}
		for _, k := range keys[lo:min(lo+perCommit, n)] {
			lines = append(lines, fmt.Sprintf(`{"add":{"path":%q,"partitionValues":{"p":"%s"},"size":4,"modificationTime":%d,"dataChange":true}}`,
				k, strings.TrimPrefix(k[:strings.IndexByte(k, '/')], "p="), created))
		}
		put(v, lines)
		v++
	}
	for lo := 0; lo < n; lo += perCommit {
		var b bytes.Buffer
		b.WriteString(`{"commitInfo":{"operation":"DELETE"}}` + "\n")
		for _, k := range keys[lo:min(lo+perCommit, n)] {
			fmt.Fprintf(&b, `{"remove":{"path":%q,"deletionTimestamp":%d,"dataChange":true,"size":4}}`+"\n", k, created+1000)
		}
		if err := real.Log.PutIfAbsent(ctx, logpath.CommitKey(v), b.Bytes()); err != nil {
			t.Fatal(err)
		}
		v++
	}
	clock := func() time.Time { return time.Now().Add(8 * 24 * time.Hour) }
	res, err := Run(ctx, tbl, Options{Mode: Lite, Now: clock, SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	lists, calls := counter.snapshot()
	t.Logf("lite vacuum of %d expired tombstones over %d commits: deleted %d files; store calls: lists %v, %v", n, v, res.FilesDeleted, lists, calls)
	if res.FilesDeleted != int64(n) {
		t.Fatalf("deleted %d files, want %d", res.FilesDeleted, n)
	}
	for k := range lists {
		prefix := k[:strings.IndexByte(k, '|')]
		if prefix != logpath.LogDir && prefix != "_compactord/" {
			t.Errorf("lite vacuum listed %q", k)
		}
	}
	if calls["delete"] != n {
		t.Errorf("%d deletes, want %d", calls["delete"], n)
	}
	for _, k := range []string{keys[0], keys[n-1]} {
		if ok, _ := real.Bucket.Exists(ctx, k); ok {
			t.Errorf("%s survived", k)
		}
	}
}
