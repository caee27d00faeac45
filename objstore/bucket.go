package objstore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cenkalti/backoff/v5"
	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
)

// Wrap returns a bucket that sends every call to b with the deadlines and
// retries of opts (see the package doc). b must not be used directly
// afterwards except to close it, which closing the returned bucket does.
// Errors keep b's codes and b's As types; where b's SDK could not name a
// code (an error answer whose body was cut), the bucket's code is the one
// the answer's status says (Code). Classify a write's error with Code, not
// gcerrors.Code: gocloud's Upload hands a driver's error back without
// asking the driver for its code.
func Wrap(b *blob.Bucket, opts Options) *blob.Bucket {
	return blob.NewBucket(&bucket{inner: b, opts: opts.withDefaults()})
}

// bucket is a gocloud driver over another portable bucket; the portable
// type wraps it again, so callers see an ordinary *blob.Bucket.
type bucket struct {
	inner *blob.Bucket
	opts  Options
}

var _ driver.Bucket = (*bucket)(nil)

// retrier is the retry state of one call.
type retrier struct {
	opts    Options
	budget  *Budget
	bo      *backoff.ExponentialBackOff
	attempt int
}

func (b *bucket) retrier(ctx context.Context) *retrier {
	bo := &backoff.ExponentialBackOff{
		InitialInterval:     b.opts.InitialBackoff,
		RandomizationFactor: 0.5,
		Multiplier:          2,
		MaxInterval:         b.opts.MaxBackoff,
	}
	bo.Reset()
	return &retrier{opts: b.opts, budget: BudgetFrom(ctx), bo: bo}
}

// next decides whether err, from an attempt of a call whose context is ctx,
// is retried: it waits the backoff and returns nil, or returns the error to
// give the caller.
func (r *retrier) next(ctx context.Context, op string, err error) error {
	r.attempt++
	if ctx.Err() != nil || !Transient(err) {
		return err
	}
	if r.attempt >= r.opts.MaxAttempts {
		return fmt.Errorf("%s: gave up after %d attempts: %w", op, r.attempt, err)
	}
	if !r.budget.take() {
		return fmt.Errorf("%s: %w after %d attempt(s): %w", op, ErrBudgetExhausted, r.attempt, err)
	}
	if Sleep(ctx, r.bo.NextBackOff()) != nil {
		return err
	}
	return nil
}

// Sleep waits d, or until ctx ends, when it returns ctx.Err(): the wait
// between two attempts of a retry loop.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// do runs fn with a per-attempt timeout until it succeeds, fails for good,
// or the retries run out.
func (b *bucket) do(ctx context.Context, op string, timeout time.Duration, fn func(ctx context.Context) error) error {
	r := b.retrier(ctx)
	for {
		actx, cancel := context.WithTimeout(ctx, timeout)
		actx, withAnswer := captureAnswer(actx)
		err := withAnswer(fn(actx))
		if err != nil && actx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("%s: no answer within %v: %w", op, timeout, err)
		}
		cancel()
		if err == nil {
			return nil
		}
		if err = r.next(ctx, op, err); err != nil {
			return err
		}
	}
}

// ErrorCode implements driver.Bucket: the inner bucket's code, or, where
// the SDK could not name one, the code the store's answer says (Code).
func (b *bucket) ErrorCode(err error) gcerrors.ErrorCode { return Code(err) }

// As implements driver.Bucket.
func (b *bucket) As(i any) bool { return b.inner.As(i) }

// ErrorAs implements driver.Bucket.
func (b *bucket) ErrorAs(err error, i any) bool { return b.inner.ErrorAs(err, i) }

// Attributes implements driver.Bucket.
func (b *bucket) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	var a *blob.Attributes
	err := b.do(ctx, "attributes of "+key, b.opts.MetadataTimeout, func(ctx context.Context) error {
		var err error
		a, err = b.inner.Attributes(ctx, key)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &driver.Attributes{
		CacheControl:       a.CacheControl,
		ContentDisposition: a.ContentDisposition,
		ContentEncoding:    a.ContentEncoding,
		ContentLanguage:    a.ContentLanguage,
		ContentType:        a.ContentType,
		Metadata:           a.Metadata,
		CreateTime:         a.CreateTime,
		ModTime:            a.ModTime,
		Size:               a.Size,
		MD5:                a.MD5,
		ETag:               a.ETag,
		AsFunc:             a.As,
	}, nil
}

// ListPaged implements driver.Bucket; each page is one retried call.
func (b *bucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	var (
		objs []*blob.ListObject
		next []byte
	)
	lo := &blob.ListOptions{Prefix: opts.Prefix, Delimiter: opts.Delimiter, BeforeList: opts.BeforeList}
	pageSize := opts.PageSize
	if pageSize <= 0 {
		pageSize = 1000
	}
	err := b.do(ctx, "list "+opts.Prefix, b.opts.MetadataTimeout, func(ctx context.Context) error {
		var err error
		objs, next, err = b.inner.ListPage(ctx, pageTokenOrFirst(opts.PageToken), pageSize, lo)
		return err
	})
	if err != nil {
		return nil, err
	}
	page := &driver.ListPage{NextPageToken: next, Objects: make([]*driver.ListObject, len(objs))}
	for i, o := range objs {
		page.Objects[i] = &driver.ListObject{Key: o.Key, ModTime: o.ModTime, Size: o.Size, MD5: o.MD5, IsDir: o.IsDir, AsFunc: o.As}
	}
	return page, nil
}

// pageTokenOrFirst maps the driver's "no token" to the portable first page.
func pageTokenOrFirst(tok []byte) []byte {
	if len(tok) == 0 {
		return blob.FirstPageToken
	}
	return tok
}

// Copy implements driver.Bucket.
func (b *bucket) Copy(ctx context.Context, dstKey, srcKey string, opts *driver.CopyOptions) error {
	return b.do(ctx, "copy "+srcKey+" to "+dstKey, b.opts.MetadataTimeout, func(ctx context.Context) error {
		return b.inner.Copy(ctx, dstKey, srcKey, &blob.CopyOptions{BeforeCopy: opts.BeforeCopy})
	})
}

// Delete implements driver.Bucket; the deletion gate's deletes reach the
// store here (this is the store, below the gate). A retried delete whose first attempt
// landed may answer NotFound; callers that delete treat that as done.
func (b *bucket) Delete(ctx context.Context, key string, opts *driver.DeleteOptions) error {
	return b.do(ctx, "delete "+key, b.opts.MetadataTimeout, func(ctx context.Context) error {
		return b.inner.Delete(ctx, key)
	})
}

// SignedURL implements driver.Bucket.
func (b *bucket) SignedURL(ctx context.Context, key string, opts *driver.SignedURLOptions) (string, error) {
	return b.inner.SignedURL(ctx, key, &blob.SignedURLOptions{
		Expiry: opts.Expiry, Method: opts.Method, ContentType: opts.ContentType,
		EnforceAbsentContentType: opts.EnforceAbsentContentType, BeforeSign: opts.BeforeSign,
	})
}

// Close implements driver.Bucket.
func (b *bucket) Close() error { return b.inner.Close() }

// WholeWriteLimit is the size up to which a write is held in memory and
// sent as one request at Close, so that a transient failure of it is
// retried like any other call: with backoff, within MaxAttempts and the
// run's budget. It is the S3 SDK's smallest part size: a write under it is
// one PUT there too, which the SDK retries only a few times on its own, and
// a write over it is a multipart upload whose parts the SDK retries each.
const WholeWriteLimit = 5 << 20

// NewTypedWriter implements driver.Bucket. A write has a deadline,
// WriteTimeout from its start to its Close. One of at most WholeWriteLimit
// bytes that is neither a conditional create (IfNotExist) nor conditioned
// by a BeforeWrite hook is retried whole: every attempt sends the same
// bytes to the same key, so an attempt whose answer was lost and that
// landed is simply written again. A conditional write is never retried
// here (whether a lost one landed is for its caller to settle), nor is a
// larger one (its bytes stream through once; the SDK retries each part).
func (b *bucket) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	wctx, cancel := context.WithTimeout(ctx, b.opts.WriteTimeout)
	wctx, withAnswer := captureAnswer(wctx)
	return &writer{bucket: b, b: b.inner, key: key, ctx: wctx, cancel: cancel, withAnswer: withAnswer, timeout: b.opts.WriteTimeout,
		whole: !opts.IfNotExist && opts.BeforeWrite == nil,
		opts: &blob.WriterOptions{
			BufferSize:                  opts.BufferSize,
			MaxConcurrency:              opts.MaxConcurrency,
			CacheControl:                opts.CacheControl,
			ContentDisposition:          opts.ContentDisposition,
			ContentEncoding:             opts.ContentEncoding,
			ContentLanguage:             opts.ContentLanguage,
			ContentType:                 contentType,
			ContentMD5:                  opts.ContentMD5,
			Metadata:                    opts.Metadata,
			DisableContentTypeDetection: opts.DisableContentTypeDetection,
			BeforeWrite:                 opts.BeforeWrite,
			IfNotExist:                  opts.IfNotExist,
		}}, nil
}

// writer is a write with a deadline. A retriable write (whole) holds its
// bytes until Close or until they pass WholeWriteLimit; otherwise, and
// from then on, it streams through the inner writer, opened on the first
// Write. A whole-object Upload goes to the inner bucket's Upload instead
// (its drivers' single-shot path; gocloud's azureblob v0.47.0 panics in
// Writer.Close after a failed streamed upload).
type writer struct {
	bucket  *bucket
	b       *blob.Bucket
	key     string
	opts    *blob.WriterOptions
	ctx     context.Context
	cancel  context.CancelFunc
	timeout time.Duration
	// withAnswer adds the store's answer to an error returned without it.
	withAnswer func(error) error
	// whole: the write may be retried whole; buf holds its bytes while it
	// is under WholeWriteLimit and nothing was streamed.
	whole bool
	buf   []byte

	w        *blob.Writer
	uploaded bool
}

func (w *writer) open() error {
	if w.w != nil {
		return nil
	}
	bw, err := w.b.NewWriter(w.ctx, w.key, w.opts)
	if err != nil {
		return w.annotate(err)
	}
	w.w = bw
	return nil
}

func (w *writer) Write(p []byte) (int, error) {
	if w.w == nil && w.whole {
		if len(w.buf)+len(p) <= WholeWriteLimit {
			w.buf = append(w.buf, p...)
			return len(p), nil
		}
		// Too large to hold: stream what was held, then the rest.
		w.whole = false
		if err := w.open(); err != nil {
			return 0, err
		}
		if _, err := w.w.Write(w.buf); err != nil {
			return 0, w.annotate(err)
		}
		w.buf = nil
	}
	if err := w.open(); err != nil {
		return 0, err
	}
	n, err := w.w.Write(p)
	return n, w.annotate(err)
}

// Upload implements driver.Uploader. A retriable write whose reader can
// seek back is retried whole, as a held write is.
func (w *writer) Upload(r io.Reader) error {
	w.uploaded = true
	rs, ok := r.(io.ReadSeeker)
	if !w.whole || !ok {
		return w.annotate(w.b.Upload(w.ctx, w.key, r, w.opts))
	}
	start, err := rs.Seek(0, io.SeekCurrent)
	if err != nil {
		return w.annotate(w.b.Upload(w.ctx, w.key, r, w.opts))
	}
	return w.retried(func(ctx context.Context) error {
		if _, err := rs.Seek(start, io.SeekStart); err != nil {
			return err
		}
		return w.b.Upload(ctx, w.key, rs, w.opts)
	})
}

// retried runs upload until it succeeds, fails for good, or the retries
// (MaxAttempts, the run's budget) run out.
func (w *writer) retried(upload func(ctx context.Context) error) error {
	r := w.bucket.retrier(w.ctx)
	for {
		err := w.annotate(upload(w.ctx))
		if err == nil {
			return nil
		}
		if err = r.next(w.ctx, "write "+w.key, err); err != nil {
			return err
		}
	}
}

func (w *writer) Close() error {
	defer w.cancel()
	if w.uploaded {
		return nil
	}
	if w.w == nil && w.whole {
		// An abandoned write (its context canceled) writes nothing.
		if err := w.ctx.Err(); err != nil {
			return w.annotate(err)
		}
		data := w.buf
		w.buf = nil
		return w.retried(func(ctx context.Context) error {
			return w.b.Upload(ctx, w.key, bytes.NewReader(data), w.opts)
		})
	}
	if err := w.open(); err != nil {
		return err
	}
	return w.annotate(w.w.Close())
}

func (w *writer) annotate(err error) error {
	err = w.withAnswer(err)
	if err != nil && w.ctx.Err() == context.DeadlineExceeded {
		return fmt.Errorf("write of %s not finished within %v: %w", w.key, w.timeout, err)
	}
	return err
}
