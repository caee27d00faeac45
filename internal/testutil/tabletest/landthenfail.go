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
	"github.com/compactord/compactord/internal/testutil"
)

// ErrClosedAfterLanding is the error of a LandThenFail write's Close.
var ErrClosedAfterLanding = errors.New("close failed after the object landed")

// LandThenFail watches a real bucket (a testutil.Forward over it) whose
// writes of keys containing Match land and then fail at Close with ErrClosedAfterLanding,
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
	fw := &testutil.Forward{Inner: inner,
		NewWriter: func(ctx context.Context, key string, opts *blob.WriterOptions) (driver.Writer, error) {
			if !strings.Contains(key, match) {
				return nil, nil
			}
			return &landingWriter{b: f, ctx: ctx, key: key, opts: opts}, nil
		},
		ErrorCodeOf: func(err error) gcerrors.ErrorCode {
			if errors.Is(err, ErrClosedAfterLanding) {
				return gcerrors.InvalidArgument
			}
			return gcerrors.Unknown
		}}
	tbl.Bucket = fw.Bucket()
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

// WantNoneLeft checks that writes landed and failed (the test proves
// something), that an intent record named each when it landed, and that
// none of them nor any intent record is left in tbl.
func (b *LandThenFail) WantNoneLeft(t testing.TB, tbl *delta.Table) {
	t.Helper()
	landed, named := b.Landed()
	if len(landed) == 0 {
		t.Fatalf("no object matching %q was written: the test proves nothing", b.Match)
	}
	after := StoreObjects(t, tbl)
	for _, k := range landed {
		if !named[k] {
			t.Errorf("the intent record did not name %s when it was created", k)
		}
		if after[k] {
			t.Errorf("%s, landed by a put whose close failed, is left behind", k)
		}
	}
	for k := range after {
		if strings.HasPrefix(k, attempt.RecordsDir) {
			t.Errorf("record %s is left after the attempt cleaned up", k)
		}
	}
}
