package writer

import (
	"context"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"

	"github.com/compactord/compactord/internal/attempt"
)

// BenchmarkRewrite rewrites generated tables (10 mixed columns) and reports
// input MB/s. Sub-benchmarks:
//   - small-files / small-files-rows: 64 MiB of 1-4 MiB snappy files into
//     zstd outputs, in packs (column by column) and through the row path;
//   - large-zstd-copy / large-zstd-nocopy: 4 files of 16 MiB (one row group
//     each, zstd as compactord writes) with the page-copy path on and off.
//
// Run with: go test ./writer -run '^$' -bench Rewrite -benchtime 3x
func BenchmarkRewrite(b *testing.B) {
	cases := []struct {
		name    string
		total   int64
		lo, hi  int64
		zstd    bool
		noCopy  bool
		minCopy int64
	}{
		{name: "small-files", total: 64 << 20, lo: 1 << 20, hi: 4 << 20},
		{name: "small-files-rows", total: 64 << 20, lo: 1 << 20, hi: 4 << 20, noCopy: true},
		{name: "large-zstd-copy", total: 64 << 20, lo: 16 << 20, hi: 16 << 20, zstd: true, minCopy: 1 << 20},
		{name: "large-zstd-nocopy", total: 64 << 20, lo: 16 << 20, hi: 16 << 20, zstd: true, noCopy: true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var codec compress.Codec = &parquet.Snappy
			if c.zstd {
				codec = &parquet.Zstd
			}
			_, tbl, snap := generatedTable(b, c.total, c.lo, c.hi, 1, codec)
			ctx := context.Background()
			var in int64
			for _, f := range snap.Files {
				in += f.Size
			}
			opts := DefaultOptions()
			opts.DisableCopyPath = c.noCopy
			opts.copyMinBytes = c.minCopy
			jobs := []*Job{{ID: "all", Sources: snap.Files}}
			b.SetBytes(in)
			b.ResetTimer()
			copied, packed := 0, 0
			for i := 0; i < b.N; i++ {
				objs := &attempt.Objects{}
				results, err := RewriteAll(ctx, tbl, snap, jobs, objs, opts)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				for _, r := range results {
					copied += r.CopiedRowGroups
					packed += r.PackedSources
					if err := cleanAttempt(ctx, objs, tbl); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(copied)/float64(b.N), "copied-rowgroups/op")
			b.ReportMetric(float64(packed)/float64(b.N), "packed-sources/op")
		})
	}
}
