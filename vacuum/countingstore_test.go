package vacuum

import (
	"context"
	"errors"
	"sync"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
)

// countingStore is a blob driver that forwards every call to a real bucket
// and counts it: LIST calls by prefix and delimiter, other calls by kind.
type countingStore struct {
	inner *blob.Bucket

	mu    sync.Mutex
	lists map[string]int // "prefix|delimiter" -> pages listed
	calls map[string]int // "get", "put", "delete", "attributes", "copy"
}

var _ driver.Bucket = (*countingStore)(nil)

func newCountingStore(inner *blob.Bucket) (*countingStore, *blob.Bucket) {
	c := &countingStore{inner: inner, lists: map[string]int{}, calls: map[string]int{}}
	return c, blob.NewBucket(c)
}

func (c *countingStore) count(kind string) {
	c.mu.Lock()
	c.calls[kind]++
	c.mu.Unlock()
}

func (c *countingStore) snapshot() (lists, calls map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lists, calls = map[string]int{}, map[string]int{}
	for k, v := range c.lists {
		lists[k] = v
	}
	for k, v := range c.calls {
		calls[k] = v
	}
	return lists, calls
}

func (c *countingStore) ErrorCode(err error) gcerrors.ErrorCode { return gcerrors.Code(err) }
func (c *countingStore) As(any) bool                            { return false }
func (c *countingStore) ErrorAs(err error, i any) bool          { return c.inner.ErrorAs(err, i) }
func (c *countingStore) Close() error                           { return nil }

func (c *countingStore) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	c.count("attributes")
	a, err := c.inner.Attributes(ctx, key)
	if err != nil {
		return nil, err
	}
	return &driver.Attributes{ContentType: a.ContentType, Metadata: a.Metadata, ModTime: a.ModTime, Size: a.Size, MD5: a.MD5, ETag: a.ETag}, nil
}

func (c *countingStore) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	c.mu.Lock()
	c.lists[opts.Prefix+"|"+opts.Delimiter]++
	c.mu.Unlock()
	token := opts.PageToken
	if len(token) == 0 {
		token = blob.FirstPageToken
	}
	objs, next, err := c.inner.ListPage(ctx, token, max(opts.PageSize, 1000), &blob.ListOptions{Prefix: opts.Prefix, Delimiter: opts.Delimiter})
	if err != nil {
		return nil, err
	}
	page := &driver.ListPage{NextPageToken: next}
	for _, o := range objs {
		page.Objects = append(page.Objects, &driver.ListObject{Key: o.Key, ModTime: o.ModTime, Size: o.Size, MD5: o.MD5, IsDir: o.IsDir})
	}
	return page, nil
}

func (c *countingStore) NewRangeReader(ctx context.Context, key string, offset, length int64, _ *driver.ReaderOptions) (driver.Reader, error) {
	c.count("get")
	r, err := c.inner.NewRangeReader(ctx, key, offset, length, nil)
	if err != nil {
		return nil, err
	}
	return &countingReader{r: r}, nil
}

type countingReader struct{ r *blob.Reader }

func (r *countingReader) Read(p []byte) (int, error) { return r.r.Read(p) }
func (r *countingReader) Close() error               { return r.r.Close() }
func (r *countingReader) As(any) bool                { return false }
func (r *countingReader) Attributes() *driver.ReaderAttributes {
	return &driver.ReaderAttributes{ContentType: r.r.ContentType(), ModTime: r.r.ModTime(), Size: r.r.Size()}
}

func (c *countingStore) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	c.count("put")
	wo := &blob.WriterOptions{ContentType: contentType}
	if opts != nil {
		wo.Metadata, wo.IfNotExist, wo.ContentMD5 = opts.Metadata, opts.IfNotExist, opts.ContentMD5
	}
	return c.inner.NewWriter(ctx, key, wo)
}

func (c *countingStore) Copy(ctx context.Context, dst, src string, _ *driver.CopyOptions) error {
	c.count("copy")
	return c.inner.Copy(ctx, dst, src, nil)
}

func (c *countingStore) Delete(ctx context.Context, key string, _ *driver.DeleteOptions) error {
	c.count("delete")
	return c.inner.Delete(ctx, key)
}

func (c *countingStore) SignedURL(context.Context, string, *driver.SignedURLOptions) (string, error) {
	return "", errors.New("counting store: no signed URLs")
}
