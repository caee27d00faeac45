package pq

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/parquet-go/parquet-go"
	"gocloud.dev/blob/memblob"
)

func TestObjectReaderAtGETs(t *testing.T) {
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	defer b.Close()
	r := rand.New(rand.NewPCG(1, 2))
	small := make([]byte, 100<<10)
	large := make([]byte, WholeObjectMax+(1<<20))
	for _, buf := range [][]byte{small, large} {
		for i := range buf {
			buf[i] = byte(r.Uint32())
		}
	}
	if err := b.WriteAll(ctx, "small", small, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteAll(ctx, "large", large, nil); err != nil {
		t.Fatal(err)
	}
	read := func(ra *ObjectReaderAt, off, n int64, want []byte) {
		t.Helper()
		p := make([]byte, n)
		got, err := ra.ReadAt(p, off)
		if err != nil && err != io.EOF {
			t.Fatal(err)
		}
		if !bytes.Equal(p[:got], want[off:off+int64(got)]) {
			t.Fatalf("ReadAt(%d, %d) returned other bytes", off, n)
		}
	}
	sm := NewObjectReaderAt(ctx, b, "small", int64(len(small)))
	for _, off := range []int64{0, 4, 50 << 10, int64(len(small)) - 8} {
		read(sm, off, 8, small)
	}
	if sm.GETs() != 1 {
		t.Fatalf("a small object took %d GETs, want 1 (fetched whole)", sm.GETs())
	}
	lg := NewObjectReaderAt(ctx, b, "large", int64(len(large)))
	read(lg, int64(len(large))-8, 8, large)
	read(lg, int64(len(large))-100<<10, 90<<10, large)
	if lg.GETs() != 1 {
		t.Fatalf("footer-length and footer reads took %d GETs, want 1 (tail prefetch)", lg.GETs())
	}
	read(lg, 0, 1<<20, large)
	if lg.GETs() != 2 {
		t.Fatalf("a body read took %d GETs in all, want 2", lg.GETs())
	}
	p := make([]byte, 16)
	if n, err := lg.ReadAt(p, int64(len(large))-4); n != 4 || err != io.EOF {
		t.Fatalf("read past the end: n=%d err=%v, want 4, io.EOF", n, err)
	}
}

// Opening a large parquet file costs one GET: the footer comes with the
// tail prefetch and the leading magic is not fetched.
func TestOpenLargeParquetInOneGET(t *testing.T) {
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	defer b.Close()
	type row struct {
		ID  int64  `parquet:"id"`
		Pad []byte `parquet:"pad"`
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[row](&buf, parquet.PageBufferSize(1<<20))
	r := rand.New(rand.NewPCG(3, 4))
	rows := make([]row, 0, 1000)
	for i := 0; buf.Len() < WholeObjectMax+(2<<20); i++ {
		pad := make([]byte, 1024)
		for j := range pad {
			pad[j] = byte(r.Uint32())
		}
		rows = append(rows, row{ID: int64(i), Pad: pad})
		if len(rows) == cap(rows) {
			if _, err := w.Write(rows); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			rows = rows[:0]
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteAll(ctx, "big.parquet", buf.Bytes(), nil); err != nil {
		t.Fatal(err)
	}
	ra := NewObjectReaderAt(ctx, b, "big.parquet", int64(buf.Len()))
	f, err := OpenParquet(ra, int64(buf.Len()), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if ra.GETs() != 1 {
		t.Fatalf("opening a %d-byte parquet file took %d GETs, want 1", buf.Len(), ra.GETs())
	}
	if f.NumRows() == 0 {
		t.Fatal("no rows")
	}
}
