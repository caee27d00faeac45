package testutil

import (
	"context"
	"errors"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
)

// Forward is a blob driver that forwards every call to a real bucket, for
// tests that watch or bend a store's calls: OnCall sees each call first
// (kind "list", "get", "put", "delete", "attributes" or "copy"; for a list
// the key is "prefix|delimiter"), NewWriter replaces the put of the keys it
// answers for, and ErrorCodeOf classes the errors the test's own writers
// return.
type Forward struct {
	// Inner is the bucket every call goes to.
	Inner *blob.Bucket
	// OnCall, when set, is called before each forwarded call.
	OnCall func(kind, key string)
	// NewWriter, when set, is asked first for each put; a nil writer and
	// nil error forwards the put to Inner.
	NewWriter func(ctx context.Context, key string, opts *blob.WriterOptions) (driver.Writer, error)
	// ErrorCodeOf, when set, classes an error before gcerrors.Code does;
	// gcerrors.Unknown defers to gcerrors.Code.
	ErrorCodeOf func(error) gcerrors.ErrorCode
}

var _ driver.Bucket = (*Forward)(nil)

// Bucket returns a *blob.Bucket over f.
func (f *Forward) Bucket() *blob.Bucket { return blob.NewBucket(f) }

func (f *Forward) call(kind, key string) {
	if f.OnCall != nil {
		f.OnCall(kind, key)
	}
}

// ErrorCode implements driver.Bucket.
func (f *Forward) ErrorCode(err error) gcerrors.ErrorCode {
	if f.ErrorCodeOf != nil {
		if c := f.ErrorCodeOf(err); c != gcerrors.Unknown {
			return c
		}
	}
	return gcerrors.Code(err)
}

// As implements driver.Bucket.
func (f *Forward) As(any) bool { return false }

// ErrorAs implements driver.Bucket.
func (f *Forward) ErrorAs(err error, i any) bool { return f.Inner.ErrorAs(err, i) }

// Close implements driver.Bucket; the inner bucket stays open.
func (f *Forward) Close() error { return nil }

// Attributes implements driver.Bucket.
func (f *Forward) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	f.call("attributes", key)
	a, err := f.Inner.Attributes(ctx, key)
	if err != nil {
		return nil, err
	}
	return &driver.Attributes{ContentType: a.ContentType, Metadata: a.Metadata, ModTime: a.ModTime, Size: a.Size, MD5: a.MD5, ETag: a.ETag}, nil
}

// ListPaged implements driver.Bucket.
func (f *Forward) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	f.call("list", opts.Prefix+"|"+opts.Delimiter)
	token := opts.PageToken
	if len(token) == 0 {
		token = blob.FirstPageToken
	}
	objs, next, err := f.Inner.ListPage(ctx, token, max(opts.PageSize, 1000), &blob.ListOptions{Prefix: opts.Prefix, Delimiter: opts.Delimiter})
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
func (f *Forward) NewRangeReader(ctx context.Context, key string, offset, length int64, _ *driver.ReaderOptions) (driver.Reader, error) {
	f.call("get", key)
	r, err := f.Inner.NewRangeReader(ctx, key, offset, length, nil)
	if err != nil {
		return nil, err
	}
	return &forwardReader{r: r}, nil
}

type forwardReader struct{ r *blob.Reader }

func (r *forwardReader) Read(p []byte) (int, error) { return r.r.Read(p) }
func (r *forwardReader) Close() error               { return r.r.Close() }
func (r *forwardReader) As(any) bool                { return false }
func (r *forwardReader) Attributes() *driver.ReaderAttributes {
	return &driver.ReaderAttributes{ContentType: r.r.ContentType(), ModTime: r.r.ModTime(), Size: r.r.Size()}
}

// NewTypedWriter implements driver.Bucket.
func (f *Forward) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	f.call("put", key)
	wo := &blob.WriterOptions{ContentType: contentType}
	if opts != nil {
		wo.Metadata, wo.IfNotExist, wo.ContentMD5 = opts.Metadata, opts.IfNotExist, opts.ContentMD5
	}
	if f.NewWriter != nil {
		w, err := f.NewWriter(ctx, key, wo)
		if w != nil || err != nil {
			return w, err
		}
	}
	return f.Inner.NewWriter(ctx, key, wo)
}

// Copy implements driver.Bucket.
func (f *Forward) Copy(ctx context.Context, dst, src string, _ *driver.CopyOptions) error {
	f.call("copy", dst)
	return f.Inner.Copy(ctx, dst, src, nil)
}

// Delete implements driver.Bucket.
func (f *Forward) Delete(ctx context.Context, key string, _ *driver.DeleteOptions) error {
	f.call("delete", key)
	return f.Inner.Delete(ctx, key)
}

// SignedURL implements driver.Bucket.
func (f *Forward) SignedURL(context.Context, string, *driver.SignedURLOptions) (string, error) {
	return "", errors.New("forwarding test bucket: no signed URLs")
}
