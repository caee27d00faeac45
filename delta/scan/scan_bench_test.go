package scan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	deltaschema "github.com/compactord/compactord/delta/schema"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/snappy"
)

const benchScanSchema = `{"type":"struct","fields":[
 {"name":"id","type":"long","nullable":true,"metadata":{}},
 {"name":"k","type":"integer","nullable":true,"metadata":{}},
 {"name":"v","type":"double","nullable":true,"metadata":{}},
 {"name":"s","type":"string","nullable":true,"metadata":{}},
 {"name":"ts","type":"timestamp","nullable":true,"metadata":{}},
 {"name":"st","type":{"type":"struct","fields":[
   {"name":"a","type":"long","nullable":true,"metadata":{}},
   {"name":"b","type":"string","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}]}`

// benchScanFile generates (once, cached in the temp dir) a ~100 MB snappy
// parquet file with mixed columns and returns its directory, name, size
// and row count.
func benchScanFile(b *testing.B, snap *delta.Snapshot) (dir, name string, size, rows int64) {
	b.Helper()
	const nrows = 1_600_000
	dir = filepath.Join(os.TempDir(), "compactord-bench-scan")
	name = fmt.Sprintf("scan-%d.snappy.parquet", nrows)
	p := filepath.Join(dir, name)
	if st, err := os.Stat(p); err == nil && st.Size() > 0 {
		return dir, name, st.Size(), nrows
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	schema, err := DataSchema(snap)
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(p + ".tmp")
	if err != nil {
		b.Fatal(err)
	}
	w := parquet.NewWriter(f, schema, parquet.Compression(&snappy.Codec{}), parquet.MaxRowsPerRowGroup(256<<10))
	rng := rand.New(rand.NewSource(1))
	const hex = "0123456789abcdef"
	batch := make([]parquet.Row, 0, 4096)
	str := func(n int) []byte {
		s := make([]byte, n)
		for i := range s {
			s[i] = hex[rng.Intn(16)]
		}
		return s
	}
	for i := 0; i < nrows; i++ {
		batch = append(batch, parquet.Row{
			parquet.Int64Value(int64(i)).Level(0, 1, 0),
			parquet.Int32Value(rng.Int31()).Level(0, 1, 1),
			parquet.DoubleValue(rng.Float64()).Level(0, 1, 2),
			parquet.ByteArrayValue(str(24+rng.Intn(24))).Level(0, 1, 3),
			parquet.Int64Value(1_700_000_000_000_000+int64(i)*1000).Level(0, 1, 4),
			parquet.Int64Value(rng.Int63()).Level(0, 2, 5),
			parquet.ByteArrayValue(str(8)).Level(0, 2, 6),
		})
		if len(batch) == cap(batch) || i == nrows-1 {
			if _, err := w.WriteRows(batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		b.Fatal(err)
	}
	st, _ := os.Stat(p)
	return dir, name, st.Size(), nrows
}

// BenchmarkScan measures FileScan on a generated ~100 MB file through a
// file:// bucket (ranged reads), with and without a deletion vector
// (every 10th row deleted), with caller-owned rows and with ReuseRows. Reports rows/s, MB/s of file, and GETs.
func BenchmarkScan(b *testing.B) {
	st, err := deltaschema.ParseSchema(benchScanSchema)
	if err != nil {
		b.Fatal(err)
	}
	snap := &delta.Snapshot{Schema: st, Metadata: actions.Metadata{SchemaString: benchScanSchema}}
	dir, name, size, nrows := benchScanFile(b, snap)
	tb := openScanTable(b, dir)
	// The widened table reads k (INT32 in the file) as long: the per-value
	// conversion path instead of the identity path.
	widenedSchema := strings.Replace(benchScanSchema, `"k","type":"integer"`, `"k","type":"long"`, 1)
	wst, err := deltaschema.ParseSchema(widenedSchema)
	if err != nil {
		b.Fatal(err)
	}
	widened := &delta.Snapshot{Schema: wst, Metadata: actions.Metadata{SchemaString: widenedSchema}}
	for _, c := range []struct{ withDV, reuse, widen bool }{{false, false, false}, {false, true, false}, {true, true, false}, {false, true, true}} {
		withDV := c.withDV
		snap := snap
		if c.widen {
			snap = widened
		}
		b.Run(fmt.Sprintf("dv=%v/reuse=%v/widen=%v", c.withDV, c.reuse, c.widen), func(b *testing.B) {
			var dv *roaring64.Bitmap
			want := nrows
			if withDV {
				dv = roaring64.New()
				for i := int64(0); i < nrows; i += 10 {
					dv.Add(uint64(i))
				}
				want -= int64(dv.GetCardinality())
			}
			add := &actions.Add{Path: name, Size: size}
			rows := make([]parquet.Row, 1024)
			idx := make([]int64, len(rows))
			b.ReportAllocs()
			b.ResetTimer()
			var gets int
			for it := 0; it < b.N; it++ {
				s, err := OpenFileScan(context.Background(), tb, snap, add, ScanOptions{DV: dv, ReuseRows: c.reuse})
				if err != nil {
					b.Fatal(err)
				}
				var n int64
				for {
					k, err := s.ReadRows(rows, idx)
					n += int64(k)
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				gets = s.ra.GETs()
				s.Close()
				if n != want {
					b.Fatalf("%d rows, want %d", n, want)
				}
			}
			secs := b.Elapsed().Seconds()
			b.ReportMetric(float64(want)*float64(b.N)/secs, "rows/s")
			b.ReportMetric(float64(size)*float64(b.N)/secs/(1<<20), "MB/s")
			b.ReportMetric(float64(gets), "GETs/scan")
			b.ReportMetric(float64(size)/(1<<20), "fileMB")
		})
	}
}
