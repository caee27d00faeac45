package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
)

// Guard returns a bucket that calls check with every key before a call
// that reads, writes, copies or deletes it reaches b, and fails the call
// with check's error when it refuses; a listing leaves out the objects
// check refuses. Local tables use it to keep every call from following a
// symbolic link out of the table's directory. b must not be used directly
// afterwards except to close it, which closing the returned bucket does.
// Errors keep b's codes (gcerrors.Code) and b's As types; a refusal has
// code gcerrors.PermissionDenied unless check's error says otherwise.
func Guard(b *blob.Bucket, check func(key string) error) *blob.Bucket {
	return blob.NewBucket(&guard{inner: b, check: check})
}

type guard struct {
	inner *blob.Bucket
	check func(key string) error
}

var _ driver.Bucket = (*guard)(nil)

// refusal is a key the check refused.
type refusal struct{ err error }

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

func (g *guard) checked(key string) error {
	if err := g.check(key); err != nil {
		return &refusal{err: err}
	}
	return nil
}

// ErrorCode implements driver.Bucket.
func (g *guard) ErrorCode(err error) gcerrors.ErrorCode {
	if _, ok := err.(*refusal); ok {
		if c := gcerrors.Code(err.(*refusal).err); c != gcerrors.Unknown {
			return c
		}
		return gcerrors.PermissionDenied
	}
	return gcerrors.Code(err)
}

// As implements driver.Bucket.
func (g *guard) As(i any) bool { return g.inner.As(i) }

// ErrorAs implements driver.Bucket.
func (g *guard) ErrorAs(err error, i any) bool { return g.inner.ErrorAs(err, i) }

// Attributes implements driver.Bucket.
func (g *guard) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	if err := g.checked(key); err != nil {
		return nil, err
	}
	a, err := g.inner.Attributes(ctx, key)
	if err != nil {
		return nil, err
	}
	return &driver.Attributes{
		CacheControl: a.CacheControl, ContentDisposition: a.ContentDisposition, ContentEncoding: a.ContentEncoding,
		ContentLanguage: a.ContentLanguage, ContentType: a.ContentType, Metadata: a.Metadata, CreateTime: a.CreateTime,
		ModTime: a.ModTime, Size: a.Size, MD5: a.MD5, ETag: a.ETag, AsFunc: a.As,
	}, nil
}

// ListPaged implements driver.Bucket: objects the check refuses are left
// out of the page (directories are kept: their objects are checked).
func (g *guard) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	lo := &blob.ListOptions{Prefix: opts.Prefix, Delimiter: opts.Delimiter, BeforeList: opts.BeforeList}
	pageSize := opts.PageSize
	if pageSize <= 0 {
		pageSize = 1000
	}
	objs, next, err := g.inner.ListPage(ctx, pageTokenOrFirst(opts.PageToken), pageSize, lo)
	if err != nil {
		return nil, err
	}
	page := &driver.ListPage{NextPageToken: next, Objects: make([]*driver.ListObject, 0, len(objs))}
	for _, o := range objs {
		if !o.IsDir && g.check(o.Key) != nil {
			continue
		}
		page.Objects = append(page.Objects, &driver.ListObject{Key: o.Key, ModTime: o.ModTime, Size: o.Size, MD5: o.MD5, IsDir: o.IsDir, AsFunc: o.As})
	}
	return page, nil
}

// NewRangeReader implements driver.Bucket.
func (g *guard) NewRangeReader(ctx context.Context, key string, offset, length int64, opts *driver.ReaderOptions) (driver.Reader, error) {
	if err := g.checked(key); err != nil {
		return nil, err
	}
	var ro *blob.ReaderOptions
	if opts != nil {
		ro = &blob.ReaderOptions{BeforeRead: opts.BeforeRead}
	}
	r, err := g.inner.NewRangeReader(ctx, key, offset, length, ro)
	if err != nil {
		return nil, err
	}
	return &guardReader{r: r}, nil
}

type guardReader struct{ r *blob.Reader }

func (r *guardReader) Read(p []byte) (int, error) { return r.r.Read(p) }
func (r *guardReader) Close() error               { return r.r.Close() }
func (r *guardReader) As(i any) bool              { return r.r.As(i) }
func (r *guardReader) Attributes() *driver.ReaderAttributes {
	return &driver.ReaderAttributes{ContentType: r.r.ContentType(), ModTime: r.r.ModTime(), Size: r.r.Size()}
}

// NewTypedWriter implements driver.Bucket.
func (g *guard) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	if err := g.checked(key); err != nil {
		return nil, err
	}
	w, err := g.inner.NewWriter(ctx, key, &blob.WriterOptions{
		BufferSize: opts.BufferSize, MaxConcurrency: opts.MaxConcurrency, CacheControl: opts.CacheControl,
		ContentDisposition: opts.ContentDisposition, ContentEncoding: opts.ContentEncoding,
		ContentLanguage: opts.ContentLanguage, ContentType: contentType, ContentMD5: opts.ContentMD5,
		Metadata: opts.Metadata, DisableContentTypeDetection: opts.DisableContentTypeDetection,
		BeforeWrite: opts.BeforeWrite, IfNotExist: opts.IfNotExist,
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// Copy implements driver.Bucket.
func (g *guard) Copy(ctx context.Context, dstKey, srcKey string, opts *driver.CopyOptions) error {
	if err := g.checked(srcKey); err != nil {
		return err
	}
	if err := g.checked(dstKey); err != nil {
		return err
	}
	return g.inner.Copy(ctx, dstKey, srcKey, &blob.CopyOptions{BeforeCopy: opts.BeforeCopy})
}

// Delete implements driver.Bucket: below the deletion gate, the last
// check of a local key before the store.
func (g *guard) Delete(ctx context.Context, key string, opts *driver.DeleteOptions) error {
	if err := g.checked(key); err != nil {
		return err
	}
	return g.inner.Delete(ctx, key)
}

// SignedURL implements driver.Bucket.
func (g *guard) SignedURL(ctx context.Context, key string, opts *driver.SignedURLOptions) (string, error) {
	if err := g.checked(key); err != nil {
		return "", err
	}
	return g.inner.SignedURL(ctx, key, &blob.SignedURLOptions{
		Expiry: opts.Expiry, Method: opts.Method, ContentType: opts.ContentType,
		EnforceAbsentContentType: opts.EnforceAbsentContentType, BeforeSign: opts.BeforeSign,
	})
}

// Close implements driver.Bucket.
func (g *guard) Close() error { return g.inner.Close() }

var _ io.ReadCloser = (*guardReader)(nil)

// ErrSymlink is wrapped by the check NoSymlinks returns when a key's path
// passes through a symbolic link.
var ErrSymlink = errors.New("path passes through a symbolic link")

// NoSymlinks returns a check for Guard over a fileblob bucket rooted at
// the directory root: it refuses a key whose file path (as fileblob maps
// it, root joined with the key) passes through a symbolic link below root,
// the file itself included, since a link may lead out of the directory. A
// key that fileblob would escape into another file name (control
// characters, "__0x", "//", "../", a trailing "/") is refused too: the path
// it reaches could not be checked. The root itself may be a link.
func NoSymlinks(root string) func(key string) error {
	return func(key string) error {
		if key == "" {
			return nil
		}
		for i := 0; i < len(key); i++ {
			if key[i] < 32 || key[i] == '\\' {
				return fmt.Errorf("key %q: a control character or backslash: %w", key, ErrUnsafeLocalKey)
			}
		}
		if strings.Contains(key, "__0x") || strings.Contains(key, "//") || strings.Contains(key, "../") || strings.HasSuffix(key, "/") {
			return fmt.Errorf("key %q: %w", key, ErrUnsafeLocalKey)
		}
		rel, err := filepath.Rel(root, filepath.Join(root, filepath.FromSlash(key)))
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return fmt.Errorf("key %q: %w", key, ErrUnsafeLocalKey)
		}
		if rel == "." {
			return nil
		}
		p := root
		for _, seg := range strings.Split(rel, string(filepath.Separator)) {
			p = filepath.Join(p, seg)
			fi, err := os.Lstat(p)
			if errors.Is(err, fs.ErrNotExist) {
				return nil // nothing there yet: a write creates a plain file or directory
			}
			if err != nil {
				return fmt.Errorf("key %q: check for symbolic links: %w", key, err)
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				return fmt.Errorf("key %q: %w (%s), which may lead outside the table directory", key, ErrSymlink, seg)
			}
		}
		return nil
	}
}

// ErrUnsafeLocalKey is wrapped by NoSymlinks' check for a key whose file
// path cannot be checked.
var ErrUnsafeLocalKey = errors.New("key cannot be mapped safely onto the local table directory")
