package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
)

// errChanged is returned when a resumed read finds a different object.
var errChanged = errors.New("object changed while it was being read")

// NewRangeReader implements driver.Bucket. Opening is retried like any
// call; a body read that fails transiently part-way is resumed with a
// ranged read of what is still missing, so the caller sees one unbroken
// body. A resume that finds a different object (size or modification time)
// fails instead of splicing two versions.
func (b *bucket) NewRangeReader(ctx context.Context, key string, offset, length int64, opts *driver.ReaderOptions) (driver.Reader, error) {
	r := &reader{b: b, ctx: ctx, key: key, offset: offset, length: length, retry: b.retrier(ctx)}
	if opts != nil {
		r.ropts = &blob.ReaderOptions{BeforeRead: opts.BeforeRead}
	}
	if err := r.open(); err != nil {
		return nil, err
	}
	r.attrs = driver.ReaderAttributes{ContentType: r.cur.ContentType(), ModTime: r.cur.ModTime(), Size: r.cur.Size()}
	return r, nil
}

// reader is a resumable body read.
type reader struct {
	b      *bucket
	ctx    context.Context
	key    string
	offset int64
	length int64 // -1: to the end
	ropts  *blob.ReaderOptions
	retry  *retrier

	attrs driver.ReaderAttributes // of the first open
	read  int64                   // bytes delivered so far

	opened bool
	cur    *blob.Reader
	idle   *time.Timer

	mu     sync.Mutex // guards cancel and stall (the idle timer's goroutine reads them)
	cancel context.CancelFunc
	stall  bool
}

// remaining is the length still to read (-1: to the end).
func (r *reader) remaining() int64 {
	if r.length < 0 {
		return -1
	}
	return r.length - r.read
}

// open (re)opens the body at the first byte not yet delivered, retrying
// transient failures; each attempt must answer within OpenTimeout.
func (r *reader) open() error {
	op := "read " + r.key
	for {
		actx, cancel := context.WithCancel(r.ctx)
		timer := time.AfterFunc(r.b.opts.OpenTimeout, cancel)
		cctx, withAnswer := captureAnswer(actx)
		cur, err := r.b.inner.NewRangeReader(cctx, r.key, r.offset+r.read, r.remaining(), r.ropts)
		err = withAnswer(err)
		timedOut := !timer.Stop()
		if err == nil {
			if r.opened && (cur.Size() != r.attrs.Size || !cur.ModTime().Equal(r.attrs.ModTime)) {
				_ = cur.Close()
				cancel()
				return fmt.Errorf("%s: %w (size %d, modified %v; was %d, %v)", op, errChanged, cur.Size(), cur.ModTime(), r.attrs.Size, r.attrs.ModTime)
			}
			r.mu.Lock()
			r.cur, r.cancel, r.opened = cur, cancel, true
			r.mu.Unlock()
			if r.idle == nil {
				r.idle = time.AfterFunc(time.Hour, r.stalled)
				r.idle.Stop()
			}
			return nil
		}
		cancel()
		if timedOut && r.ctx.Err() == nil {
			// The attempt was canceled by its deadline, not by the caller:
			// a timeout, retried like any (the cancellation it caused is
			// only the detail).
			err = fmt.Errorf("%s: no answer within %v: %w (%v)", op, r.b.opts.OpenTimeout, context.DeadlineExceeded, err)
		}
		if err = r.retry.next(r.ctx, op, err); err != nil {
			return err
		}
	}
}

// stalled runs when a body Read made no progress for ReadIdleTimeout: it
// cancels the attempt, which unblocks the Read with an error.
func (r *reader) stalled() {
	r.mu.Lock()
	r.stall = true
	cancel := r.cancel
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// drop closes the current attempt's body and cancels the attempt; it
// returns the body's Close error.
func (r *reader) drop() error {
	var err error
	if r.cur != nil {
		err = r.cur.Close()
		r.cur = nil
	}
	r.mu.Lock()
	if r.cancel != nil {
		r.cancel()
		r.cancel = nil
	}
	r.stall = false
	r.mu.Unlock()
	return err
}

// Read implements driver.Reader.
func (r *reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	op := "read " + r.key
	for {
		if r.cur == nil {
			if err := r.open(); err != nil {
				return 0, err
			}
		}
		r.idle.Reset(r.b.opts.ReadIdleTimeout)
		n, err := r.cur.Read(p)
		r.idle.Stop()
		r.read += int64(n)
		if err == io.EOF {
			if want := r.expected(); want >= 0 && r.read < want {
				// The body ended early without the transport noticing.
				err = fmt.Errorf("%s: body ended at %d of %d bytes: %w", op, r.read, want, io.ErrUnexpectedEOF)
			} else {
				return n, io.EOF
			}
		}
		if err == nil {
			return n, nil
		}
		r.mu.Lock()
		stalled := r.stall
		r.mu.Unlock()
		if stalled && r.ctx.Err() == nil {
			// Canceled by the idle timer, not by the caller: a timeout,
			// resumed like a cut body.
			err = fmt.Errorf("%s: no progress within %v: %w (%v)", op, r.b.opts.ReadIdleTimeout, context.DeadlineExceeded, err)
		}
		_ = r.drop()
		if n > 0 {
			// Deliver what arrived; the next Read resumes after it.
			if Transient(err) && r.ctx.Err() == nil {
				return n, nil
			}
			return n, err
		}
		if err = r.retry.next(r.ctx, op, err); err != nil {
			return 0, err
		}
	}
}

// expected is the total number of bytes this read must deliver, or -1 when
// unknown.
func (r *reader) expected() int64 {
	if r.attrs.Size <= 0 && r.length < 0 {
		return -1
	}
	avail := r.attrs.Size - r.offset
	if r.length >= 0 && r.length < avail {
		return r.length
	}
	return max(avail, 0)
}

// Close implements driver.Reader.
func (r *reader) Close() error {
	if r.idle != nil {
		r.idle.Stop()
	}
	return r.drop()
}

// Attributes implements driver.Reader.
func (r *reader) Attributes() *driver.ReaderAttributes { return &r.attrs }

// As implements driver.Reader.
func (r *reader) As(i any) bool { return r.cur != nil && r.cur.As(i) }
