package delta

import (
	"context"
	"fmt"
	"io"

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

// ObjectReaderAt serves io.ReaderAt over a blob object: small objects
// whole in one GET, the tail of larger ones in one GET, and any other read
// as one ranged GET (callers put a large read buffer in front of it).
type ObjectReaderAt struct {
	ctx    context.Context
	bucket *blob.Bucket
	key    string
	size   int64

	whole   []byte // the object, once fetched (size <= WholeObjectMax)
	tail    []byte // the last len(tail) bytes, once fetched
	tailOff int64
	gets    int
}

// NewObjectReaderAt reads key (size bytes) from bucket.
func NewObjectReaderAt(ctx context.Context, bucket *blob.Bucket, key string, size int64) *ObjectReaderAt {
	return &ObjectReaderAt{ctx: ctx, bucket: bucket, key: key, size: size, tailOff: -1}
}

// Size is the object's size.
func (r *ObjectReaderAt) Size() int64 { return r.size }

// GETs counts the range reads made so far.
func (r *ObjectReaderAt) GETs() int { return r.gets }

// ReadAt implements io.ReaderAt.
func (r *ObjectReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("object %s: negative offset %d", r.key, off)
	}
	if off >= r.size {
		return 0, io.EOF
	}
	if r.size <= WholeObjectMax {
		if r.whole == nil {
			b := make([]byte, r.size)
			if _, err := r.get(b, 0); err != nil {
				return 0, err
			}
			r.whole = b
		}
		return serve(p, r.whole, off)
	}
	tailStart := max(r.size-FooterPrefetch, 0)
	if off >= tailStart {
		if r.tail == nil {
			b := make([]byte, r.size-tailStart)
			if _, err := r.get(b, tailStart); err != nil {
				return 0, err
			}
			r.tail, r.tailOff = b, tailStart
		}
		return serve(p, r.tail, off-r.tailOff)
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

// get fills p from the object at off with one ranged GET.
func (r *ObjectReaderAt) get(p []byte, off int64) (int, error) {
	r.gets++
	rr, err := r.bucket.NewRangeReader(r.ctx, r.key, off, int64(len(p)), nil)
	if err != nil {
		return 0, err
	}
	defer rr.Close()
	n, err := io.ReadFull(rr, p)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = fmt.Errorf("object %s is shorter than %d bytes: %w", r.key, r.size, io.ErrUnexpectedEOF)
	}
	return n, err
}
