package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"gocloud.dev/blob"
)

// ErrTooLarge is wrapped by ReadAllLimit when an object is larger than the
// limit its reader gave.
var ErrTooLarge = errors.New("object larger than its limit")

// ReadAllLimit reads the object key of b whole, refusing it with an error
// wrapping ErrTooLarge, before its bytes are allocated, when its size is
// above limit (and when it grows past limit while it is read): the read of
// a control object (an intent record, a stored plan, a manifest, a state
// file) that a writer of the table could have made huge.
func ReadAllLimit(ctx context.Context, b *blob.Bucket, key string, limit int64) ([]byte, error) {
	r, err := b.NewReader(ctx, key, nil)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if s := r.Size(); s > limit {
		return nil, fmt.Errorf("%s: %d bytes, over the limit of %d: %w", key, s, limit, ErrTooLarge)
	}
	var buf bytes.Buffer
	buf.Grow(int(max(r.Size(), 0)) + bytes.MinRead)
	n, err := buf.ReadFrom(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, fmt.Errorf("%s: grew past the limit of %d bytes while read: %w", key, limit, ErrTooLarge)
	}
	return buf.Bytes(), nil
}
