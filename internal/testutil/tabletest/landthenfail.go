package tabletest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/attempt"
)

// ErrClosedAfterLanding is the error of a LandThenFail write's Close.
var ErrClosedAfterLanding = errors.New("close failed after the object landed")

// LandThenFail is a blob driver over a real bucket whose writes of keys
// containing Match land and then fail at Close with ErrClosedAfterLanding,
// code InvalidArgument (no unknown outcome, so the writer does not read the
// object back); it notes the key and whether an intent record
// (attempt.RecordsDir) named it when it landed.
type LandThenFail struct {
	Inner *blob.Bucket
	Match string

	mu     sync.Mutex
	landed []string
	named  map[string]bool
}

// FailClosesAfterLanding replaces tbl's bucket with a LandThenFail over it
// for keys containing match; the test's cleanup puts the bucket back.
func FailClosesAfterLanding(t testing.TB, tbl *delta.Table, match string) *LandThenFail {
	inner := tbl.Bucket
	f := &LandThenFail{Inner: inner, Match: match}
	tbl.Bucket = blob.NewBucket(f)
	t.Cleanup(func() { tbl.Bucket = inner })
	return f
}

// Landed returns the keys that landed and failed, in order, and whether an
// intent record named each when it landed.
func (b *LandThenFail) Landed() ([]string, map[string]bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	named := map[string]bool{}
	for k, v := range b.named {
		named[k] = v
	}
	return append([]string(nil), b.landed...), named
}

var _ driver.Bucket = (*LandThenFail)(nil)

// ErrorCode implements driver.Bucket.
func (b *LandThenFail) ErrorCode(err error) gcerrors.ErrorCode {
	if errors.Is(err, ErrClosedAfterLanding) {
		return gcerrors.InvalidArgument
	}
	return gcerrors.Code(err)
}

// As implements driver.Bucket.
func (b *LandThenFail) As(any) bool { return false }

// ErrorAs implements driver.Bucket.
func (b *LandThenFail) ErrorAs(err error, i any) bool { return b.Inner.ErrorAs(err, i) }

// Close implements driver.Bucket.
func (b *LandThenFail) Close() error { return nil }

// Attributes implements driver.Bucket.
func (b *LandThenFail) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	a, err := b.Inner.Attributes(ctx, key)
	if err != nil {
		return nil, err
	}
	return &driver.Attributes{ContentType: a.ContentType, Metadata: a.Metadata, ModTime: a.ModTime, Size: a.Size, MD5: a.MD5, ETag: a.ETag}, nil
}

// ListPaged implements driver.Bucket.
func (b *LandThenFail) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	token := opts.PageToken
	if len(token) == 0 {
		token = blob.FirstPageToken
	}
	objs, next, err := b.Inner.ListPage(ctx, token, max(opts.PageSize, 1000), &blob.ListOptions{Prefix: opts.Prefix, Delimiter: opts.Delimiter})
	if err != nil {
		return nil, err
	}
	page := &driver.ListPage{NextPageToken: next}
	for _, o := range objs {
		page.Objects = append(page.Objects, &driver.ListObject{Key: o.Key, ModTime: o.ModTime, Size: o.Size, MD5: o.MD5, IsDir: o.IsDir})
	}
	return page, nil
}

// NewRangeReader implements driver.Bucket.
func (b *LandThenFail) NewRangeReader(ctx context.Context, key string, offset, length int64, _ *driver.ReaderOptions) (driver.Reader, error) {
	r, err := b.Inner.NewRangeReader(ctx, key, offset, length, nil)
	if err != nil {
		return nil, err
	}
	return &passReader{r: r}, nil
}

type passReader struct{ r *blob.Reader }

func (r *passReader) Read(p []byte) (int, error) { return r.r.Read(p) }
func (r *passReader) Close() error               { return r.r.Close() }
func (r *passReader) As(any) bool                { return false }
func (r *passReader) Attributes() *driver.ReaderAttributes {
	return &driver.ReaderAttributes{ContentType: r.r.ContentType(), ModTime: r.r.ModTime(), Size: r.r.Size()}
}

// NewTypedWriter implements driver.Bucket.
func (b *LandThenFail) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	wo := &blob.WriterOptions{ContentType: contentType}
	if opts != nil {
		wo.Metadata, wo.IfNotExist, wo.ContentMD5 = opts.Metadata, opts.IfNotExist, opts.ContentMD5
	}
	if !strings.Contains(key, b.Match) {
		return b.Inner.NewWriter(ctx, key, wo)
	}
	return &landingWriter{b: b, ctx: ctx, key: key, opts: wo}, nil
}

// landingWriter buffers the object, writes it to the inner bucket at
// Close, and then fails.
type landingWriter struct {
	b    *LandThenFail
	ctx  context.Context
	key  string
	opts *blob.WriterOptions
	buf  bytes.Buffer
}

func (w *landingWriter) Write(p []byte) (int, error) { return w.buf.Write(p) }

func (w *landingWriter) Close() error {
	if err := w.b.Inner.WriteAll(w.ctx, w.key, w.buf.Bytes(), w.opts); err != nil {
		return err
	}
	named := false
	it := w.b.Inner.List(&blob.ListOptions{Prefix: attempt.RecordsDir})
	for {
		o, err := it.Next(w.ctx)
		if err != nil {
			break
		}
		data, err := w.b.Inner.ReadAll(w.ctx, o.Key)
		if err != nil {
			continue
		}
		if rec, err := attempt.ParseRecord(o.Key, data); err == nil {
			for _, k := range rec.Keys {
				named = named || k == w.key
			}
		}
	}
	w.b.mu.Lock()
	if w.b.named == nil {
		w.b.named = map[string]bool{}
	}
	w.b.landed = append(w.b.landed, w.key)
	w.b.named[w.key] = named
	w.b.mu.Unlock()
	return ErrClosedAfterLanding
}

// Copy implements driver.Bucket.
func (b *LandThenFail) Copy(ctx context.Context, dst, src string, _ *driver.CopyOptions) error {
	return b.Inner.Copy(ctx, dst, src, nil)
}

// Delete implements driver.Bucket.
func (b *LandThenFail) Delete(ctx context.Context, key string, _ *driver.DeleteOptions) error {
	return b.Inner.Delete(ctx, key)
}

// SignedURL implements driver.Bucket.
func (b *LandThenFail) SignedURL(context.Context, string, *driver.SignedURLOptions) (string, error) {
	return "", errors.New("no signed URLs")
}
