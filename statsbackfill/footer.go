package statsbackfill

import (
	"context"
	"fmt"

	"github.com/parquet-go/parquet-go"
	"golang.org/x/sync/errgroup"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/pq"
	"github.com/compactord/compactord/failure"
)

// FooterRows returns the physical row count of a's data file from its
// parquet footer (one or two range reads, no page is read).
func FooterRows(ctx context.Context, t *delta.Table, a *actions.Add) (n int64, err error) {
	key, err := a.Key()
	if err != nil {
		return 0, err
	}
	defer pq.Guard(&err, failure.DataFile, a.Path)
	r := pq.NewObjectReaderAt(ctx, t.Bucket, key, a.Size)
	f, err := parquet.OpenFile(r, a.Size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true), parquet.ReadBufferSize(64<<10))
	if err != nil {
		// A footer parquet-go refuses is the file's fault unless the store
		// failed: quarantined, not retried.
		return 0, pq.DataFileError(a.Path, r, fmt.Errorf("footer of %s: %w", key, err))
	}
	return f.NumRows(), nil
}

// FooterCounts reads the footers of files (at most concurrency at once) and
// returns each one's physical row count; unreadable files are -1 and
// their errors are counted in failed.
func FooterCounts(ctx context.Context, t *delta.Table, files []*actions.Add, concurrency int) (rows []int64, failed int) {
	rows = make([]int64, len(files))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(concurrency, 1))
	for i, a := range files {
		g.Go(func() error {
			n, err := FooterRows(gctx, t, a)
			if err != nil {
				n = -1
			}
			rows[i] = n
			return nil
		})
	}
	_ = g.Wait()
	for _, n := range rows {
		if n < 0 {
			failed++
		}
	}
	return rows, failed
}
