package delta_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/testutil/stores"
)

// Tables of one bucket opened through a pool share one client: each reads
// and writes its own prefix, closing one leaves the others working, and
// the client closes with the last. Another bucket URL (here another
// endpoint) gets its own client.
func TestTablesOfOneBucketShareOneClientUntilTheLastCloses(t *testing.T) {
	stores.FakeS3Credentials(t)
	ctx := context.Background()
	s3 := stores.NewFakeS3(t, stores.FakeS3Options{})
	pool := delta.NewBucketPool()
	open := func(url string) *delta.Table {
		t.Helper()
		tbl, err := delta.OpenTableWith(ctx, url, delta.OpenOptions{Buckets: pool})
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	a, b := open(s3.URL("tables/a")), open(s3.URL("tables/b"))
	if n := pool.Len(); n != 1 {
		t.Fatalf("two tables of one bucket hold %d clients, want 1", n)
	}
	other := stores.NewFakeS3(t, stores.FakeS3Options{})
	c := open(other.URL("tables/c"))
	if n := pool.Len(); n != 2 {
		t.Fatalf("a table of another endpoint: %d clients, want 2", n)
	}
	for _, tbl := range []*delta.Table{a, b, c} {
		if err := tbl.Bucket.WriteAll(ctx, "k", []byte(tbl.URL), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	if n := pool.Len(); n != 2 {
		t.Fatalf("after one of two tables closed: %d clients, want 2", n)
	}
	got, err := b.Bucket.ReadAll(ctx, "k")
	if err != nil || string(got) != b.URL {
		t.Fatalf("b after a closed: read %q, %v; want its own object", got, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if n := pool.Len(); n != 1 {
		t.Fatalf("after both tables of the bucket closed: %d clients, want 1 (the other endpoint's)", n)
	}
	// A table opened again gets a fresh client, and sees what a wrote.
	a2 := open(s3.URL("tables/a"))
	defer a2.Close()
	if got, err := a2.Bucket.ReadAll(ctx, "k"); err != nil || string(got) != a2.URL {
		t.Fatalf("reopened a: read %q, %v", got, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkOpenS3Tables opens 500 tables of one bucket with and without a
// pool and reports the heap each keeps open (after a GC), before any
// request.
func BenchmarkOpenS3Tables(b *testing.B) {
	s3 := stores.NewFakeS3(b, stores.FakeS3Options{})
	for _, pooled := range []bool{false, true} {
		b.Run(fmt.Sprintf("pooled=%v", pooled), func(b *testing.B) {
			const n = 500
			for range b.N {
				var pool *delta.BucketPool
				if pooled {
					pool = delta.NewBucketPool()
				}
				var ms runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms)
				before := ms.HeapAlloc
				tables := make([]*delta.Table, n)
				for i := range tables {
					tbl, err := delta.OpenTableWith(context.Background(), s3.URL(fmt.Sprintf("tables/t%d", i)), delta.OpenOptions{Buckets: pool})
					if err != nil {
						b.Fatal(err)
					}
					tables[i] = tbl
				}
				runtime.GC()
				runtime.ReadMemStats(&ms)
				b.ReportMetric(float64(ms.HeapAlloc-before)/n/1024, "KiB/table")
				for _, tbl := range tables {
					_ = tbl.Close()
				}
			}
		})
	}
}
