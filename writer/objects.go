package writer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/parquet-go/parquet-go"
	"gocloud.dev/blob"

	"github.com/compactord/compactord/delta"
	"gocloud.dev/gcerrors"
)

// tracker remembers every object key written (or being written) for a job so
// that an abandoned attempt can delete them all.
type tracker struct {
	mu   sync.Mutex
	keys []string
}

func (tr *tracker) add(key string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.keys = append(tr.keys, key)
}

// deleteAll deletes every tracked object; missing objects are fine (a write
// that never completed leaves nothing behind).
func (tr *tracker) deleteAll(ctx context.Context, b *blob.Bucket) error {
	tr.mu.Lock()
	keys := tr.keys
	tr.keys = nil
	tr.mu.Unlock()
	var errs []error
	for _, k := range keys {
		if err := b.Delete(ctx, k); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			errs = append(errs, fmt.Errorf("delete %s: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

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
