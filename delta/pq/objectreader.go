package pq

import (
	"context"
	"fmt"
	"io"
	"sync"

	"gocloud.dev/blob"
)

// Object-store read sizing: every GET costs a round trip (and money), so a
// data file is read in as few as possible.
const (
	// WholeObjectMax is the size up to which an object is fetched whole
	// with one GET on first use (typical small files of a table that needs
	// compaction).
	WholeObjectMax = 8 << 20
	// FooterPrefetch is how much of a larger object's tail is fetched with
	// one GET on the first read near its end: the parquet footer and its
	// length usually fit, so opening the file costs one GET.
	FooterPrefetch = 256 << 10
)

// CountingWriter passes writes on to W and counts in N the bytes W took:
// the size of an object being streamed to a store, known before the store
// is asked.
type CountingWriter struct {
	W io.Writer
	N int64
}

// Write implements io.Writer.
func (c *CountingWriter) Write(p []byte) (int, error) {
	n, err := c.W.Write(p)
	c.N += int64(n)
	return n, err
}

// ObjectReaderAt serves io.ReaderAt over a blob object: small objects
// whole in one GET, the tail of larger ones in one GET, and any other read
// as one ranged GET (callers put a large read buffer in front of it). It is
// safe for concurrent use (the writer computes statistics and re-encodes
// the same sources at once).
type ObjectReaderAt struct {
	ctx    context.Context
	bucket *blob.Bucket
	key    string
	size   int64

	mu    sync.Mutex // guards the fields below
	whole []byte     // the object, once fetched (size <= WholeObjectMax)
	tail  []byte     // the last len(tail) bytes, once fetched
	gets  int

	errMu    sync.Mutex
	storeErr error // the first error the store answered (not a short object)
}

// NewObjectReaderAt reads key (size bytes) from bucket.
func NewObjectReaderAt(ctx context.Context, bucket *blob.Bucket, key string, size int64) *ObjectReaderAt {
	return &ObjectReaderAt{ctx: ctx, bucket: bucket, key: key, size: size}
}

// Size is the object's size.
func (r *ObjectReaderAt) Size() int64 { return r.size }

// GETs counts the range reads made so far.
func (r *ObjectReaderAt) GETs() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gets
}

// ReadAt implements io.ReaderAt.
func (r *ObjectReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("object %s: negative offset %d", r.key, off)
	}
	if off >= r.size {
		return 0, io.EOF
	}
	if r.size <= WholeObjectMax {
		whole, err := r.cached(&r.whole, 0)
		if err != nil {
			return 0, err
		}
		return serve(p, whole, off)
	}
	tailStart := max(r.size-FooterPrefetch, 0)
	if off >= tailStart {
		tail, err := r.cached(&r.tail, tailStart)
		if err != nil {
			return 0, err
		}
		return serve(p, tail, off-tailStart)
	}
	length := min(int64(len(p)), r.size-off)
	n, err := r.get(p[:length], off)
	if err == nil && n < len(p) {
		err = io.EOF
	}
	return n, err
}

// serve copies buf[off:] into p, with io.ReaderAt's EOF rule.
func serve(p, buf []byte, off int64) (int, error) {
	n := copy(p, buf[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// cached returns the object's bytes from off to its end, fetching them
// into *buf with one GET on first use (buf is r.whole or r.tail; the
// bytes never change once fetched).
func (r *ObjectReaderAt) cached(buf *[]byte, off int64) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if *buf == nil {
		b := make([]byte, r.size-off)
		if _, err := r.getLocked(b, off); err != nil {
			return nil, err
		}
		*buf = b
	}
	return *buf, nil
}

// get fills p from the object at off with one ranged GET.
func (r *ObjectReaderAt) get(p []byte, off int64) (int, error) {
	r.mu.Lock()
	r.gets++
	r.mu.Unlock()
	return r.read(p, off)
}

// getLocked is get with r.mu held.
func (r *ObjectReaderAt) getLocked(p []byte, off int64) (int, error) {
	r.gets++
	return r.read(p, off)
}

// read fills p from the object at off with one ranged GET.
func (r *ObjectReaderAt) read(p []byte, off int64) (int, error) {
	rr, err := r.bucket.NewRangeReader(r.ctx, r.key, off, int64(len(p)), nil)
	if err != nil {
		return 0, r.failed(err)
	}
	defer rr.Close()
	n, err := io.ReadFull(rr, p)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		// The object is shorter than its add action says: its content,
		// not the store, is at fault.
		return n, fmt.Errorf("object %s is shorter than %d bytes: %w", r.key, r.size, io.ErrUnexpectedEOF)
	}
	if err != nil {
		return n, r.failed(err)
	}
	return n, nil
}

// failed records err as a store failure and returns it.
func (r *ObjectReaderAt) failed(err error) error {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	if r.storeErr == nil {
		r.storeErr = err
	}
	return err
}

// StoreErr returns the first error the store answered a read with (nil when
// every read was served; an object shorter than its size is not a store
// error). A decoding error met after a store error may be its consequence,
// not corruption.
func (r *ObjectReaderAt) StoreErr() error {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	return r.storeErr
}
