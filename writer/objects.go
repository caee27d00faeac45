package writer

import (
	"context"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
	"gocloud.dev/blob"

	"github.com/compactord/compactord/delta"
)

// countingWriter counts the bytes that reach the object.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// openParquet opens the footer of an object through ranged reads.
func openParquet(ctx context.Context, b *blob.Bucket, key string, size int64, readBuf int) (*parquet.File, error) {
	if size <= 0 {
		attrs, err := b.Attributes(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("stat %s: %w", key, err)
		}
		size = attrs.Size
	}
	// Small objects come whole in one GET, a large one's footer in one
	// tail GET (delta.ObjectReaderAt); the leading magic is not fetched.
	f, err := parquet.OpenFile(delta.NewObjectReaderAt(ctx, b, key, size), size,
		parquet.ReadBufferSize(readBuf), parquet.SkipBloomFilters(true), parquet.SkipMagicBytes(true))
	if err != nil {
		return nil, fmt.Errorf("open parquet %s: %w", key, err)
	}
	return f, nil
}
