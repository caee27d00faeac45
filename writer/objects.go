package writer

import (
	"context"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
	"gocloud.dev/blob"

	"github.com/compactord/compactord/delta/pq"
)

// openParquet opens the footer of the data file src (object key, size
// bytes) through ranged reads. A footer parquet-go rejects, or panics on, is
// a *failure.CorruptFileError naming src; the reader is returned for the
// same classification of later page reads.
func openParquet(ctx context.Context, b *blob.Bucket, src, key string, size int64, readBuf int, pages pq.PageLimits) (f *parquet.File, ra *pq.ObjectReaderAt, err error) {
	if size <= 0 {
		attrs, err := b.Attributes(ctx, key)
		if err != nil {
			return nil, nil, pq.MissingOr(src, fmt.Errorf("stat %s: %w", key, err))
		}
		size = attrs.Size
	}
	// Small objects come whole in one GET, a large one's footer in one
	// tail GET (pq.ObjectReaderAt); the leading magic is not fetched.
	ra = pq.NewObjectReaderAt(ctx, b, key, size)
	guard := pq.NewPageGuard(ra, src, pages)
	f, err = openFooter(guard, size, readBuf)
	if err != nil {
		return nil, nil, pq.DataFileError(src, ra, fmt.Errorf("open parquet %s: %w", key, err))
	}
	if err := guard.Watch(f); err != nil {
		return nil, nil, err
	}
	return f, ra, nil
}

func openFooter(ra io.ReaderAt, size int64, readBuf int) (f *parquet.File, err error) {
	defer pq.RecoverParquet(&err)
	return parquet.OpenFile(ra, size, parquet.ReadBufferSize(readBuf), parquet.SkipBloomFilters(true), parquet.SkipMagicBytes(true))
}
