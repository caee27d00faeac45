package commit_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/tabletest"
)

// A DELETE cleans up after a killed attempt at its start, as compaction and
// retention do: a record unmodified for longer than the staleness window is
// dead, and the DV file it names (written, never committed) goes with its
// upload temp file and the record; a live record (heartbeated a minute ago)
// stays with what it names. The DELETE's own record is gone once it
// committed.
func TestDeleteRowsSweepsTheDeadAttemptsOfKilledRuns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl := tabletest.NewTable(t, "file://"+filepath.ToSlash(dir), tabletest.IDRange(0, 10), tabletest.IDRange(10, 10))
	orphanDV := func() string {
		dvs, err := delta.WriteDV(ctx, tbl, "", []*roaring64.Bitmap{roaring64.BitmapOf(1, 2)})
		if err != nil {
			t.Fatal(err)
		}
		key, err := delta.DVFileKey(dvs[0].PathOrInlineDv)
		if err != nil {
			t.Fatal(err)
		}
		return key
	}
	dead, live := orphanDV(), orphanDV()
	temp := dead + ".18a2b3c4d5e6f.tmp"
	if err := tbl.Bucket.WriteAll(ctx, temp, []byte("half an upload"), nil); err != nil {
		t.Fatal(err)
	}
	deadRecord := tabletest.KilledAttempt(t, tbl, "delete", dead)
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(deadRecord)), old, old); err != nil {
		t.Fatal(err)
	}
	liveRecord := tabletest.KilledAttempt(t, tbl, "delete", live)
	recent := time.Now().Add(-time.Minute)
	if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(liveRecord)), recent, recent); err != nil {
		t.Fatal(err)
	}

	tabletest.DeleteIDs(t, tbl, 3, 14)

	after := tabletest.StoreObjects(t, tbl)
	for _, k := range []string{dead, temp, deadRecord} {
		if after[k] {
			t.Errorf("%s, left by the killed attempt, still exists after the next DELETE", k)
		}
	}
	for _, k := range []string{live, liveRecord} {
		if !after[k] {
			t.Errorf("%s, of a live attempt, was deleted", k)
		}
	}
	for k := range after {
		if strings.HasPrefix(k, attempt.RecordsDir) && k != liveRecord {
			t.Errorf("record %s is left after the DELETE committed", k)
		}
	}
	want := tabletest.IDSet(tabletest.IDRange(0, 20))
	delete(want, 3)
	delete(want, 14)
	tabletest.WantIDs(t, tbl, want)
}

// A DV file whose upload lands and then fails (the put's Close answers an
// error) is deleted by the DELETE that wrote it, and its key was in the
// DELETE's intent record before it was created, so that a kill at that
// point leaves nothing unnamed either.
func TestADVFileWhoseCloseFailsAfterItLandedIsNotLeftBehind(t *testing.T) {
	ctx := context.Background()
	tbl := tabletest.NewTable(t, "file://"+filepath.ToSlash(t.TempDir()), tabletest.IDRange(0, 10))
	inner := tbl.Bucket
	fail := &landThenFail{inner: inner, match: "deletion_vector_", t: t}
	tbl.Bucket = blob.NewBucket(fail)
	snap := tabletest.Latest(t, tbl)
	_, err := commit.DeleteRows(ctx, tbl, snap, map[string][]int64{snap.Files[0].Path: {1, 2}}, commit.DeleteOptions{})
	if err == nil || !errors.Is(err, errClosed) {
		t.Fatalf("DeleteRows = %v, want the failed close", err)
	}
	fail.mu.Lock()
	landed, named := fail.landed, fail.named
	fail.mu.Unlock()
	if landed == "" {
		t.Fatal("no DV file was written: the test proves nothing")
	}
	if !named {
		t.Errorf("the intent record did not name %s when it was created", landed)
	}
	tbl.Bucket = inner
	after := tabletest.StoreObjects(t, tbl)
	if after[landed] {
		t.Errorf("DV file %s, landed by a put whose close failed, is left behind", landed)
	}
	for k := range after {
		if strings.HasPrefix(k, attempt.RecordsDir) {
			t.Errorf("record %s is left after the DELETE cleaned up", k)
		}
	}
	tabletest.WantIDs(t, tbl, tabletest.IDSet(tabletest.IDRange(0, 10)))
}

var errClosed = errors.New("close failed after the object landed")

// landThenFail is a blob driver over a real bucket whose writes of keys
// containing match land and then fail at Close with a code that is no
// unknown outcome (so the writer does not read the object back); it notes
// whether an intent record named the key when it landed.
type landThenFail struct {
	inner *blob.Bucket
	match string
	t     testing.TB

	mu     sync.Mutex
	landed string
	named  bool
}

var _ driver.Bucket = (*landThenFail)(nil)

func (b *landThenFail) ErrorCode(err error) gcerrors.ErrorCode {
	if errors.Is(err, errClosed) {
		return gcerrors.InvalidArgument
	}
	return gcerrors.Code(err)
}
func (b *landThenFail) As(any) bool                   { return false }
func (b *landThenFail) ErrorAs(err error, i any) bool { return b.inner.ErrorAs(err, i) }
func (b *landThenFail) Close() error                  { return nil }

func (b *landThenFail) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	a, err := b.inner.Attributes(ctx, key)
	if err != nil {
		return nil, err
	}
	return &driver.Attributes{ContentType: a.ContentType, Metadata: a.Metadata, ModTime: a.ModTime, Size: a.Size, MD5: a.MD5, ETag: a.ETag}, nil
}

func (b *landThenFail) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	token := opts.PageToken
	if len(token) == 0 {
		token = blob.FirstPageToken
	}
	objs, next, err := b.inner.ListPage(ctx, token, max(opts.PageSize, 1000), &blob.ListOptions{Prefix: opts.Prefix, Delimiter: opts.Delimiter})
	if err != nil {
		return nil, err
	}
	page := &driver.ListPage{NextPageToken: next}
	for _, o := range objs {
		page.Objects = append(page.Objects, &driver.ListObject{Key: o.Key, ModTime: o.ModTime, Size: o.Size, MD5: o.MD5, IsDir: o.IsDir})
	}
	return page, nil
}

func (b *landThenFail) NewRangeReader(ctx context.Context, key string, offset, length int64, _ *driver.ReaderOptions) (driver.Reader, error) {
	r, err := b.inner.NewRangeReader(ctx, key, offset, length, nil)
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

func (b *landThenFail) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	wo := &blob.WriterOptions{ContentType: contentType}
	if opts != nil {
		wo.Metadata, wo.IfNotExist, wo.ContentMD5 = opts.Metadata, opts.IfNotExist, opts.ContentMD5
	}
	if !strings.Contains(key, b.match) {
		return b.inner.NewWriter(ctx, key, wo)
	}
	return &landingWriter{b: b, ctx: ctx, key: key, opts: wo}, nil
}

// landingWriter buffers the object, writes it to the inner bucket at
// Close, and then fails.
type landingWriter struct {
	b    *landThenFail
	ctx  context.Context
	key  string
	opts *blob.WriterOptions
	buf  bytes.Buffer
}

func (w *landingWriter) Write(p []byte) (int, error) { return w.buf.Write(p) }

func (w *landingWriter) Close() error {
	if err := w.b.inner.WriteAll(w.ctx, w.key, w.buf.Bytes(), w.opts); err != nil {
		return err
	}
	named := false
	it := w.b.inner.List(&blob.ListOptions{Prefix: attempt.RecordsDir})
	for {
		o, err := it.Next(w.ctx)
		if err != nil {
			break
		}
		data, err := w.b.inner.ReadAll(w.ctx, o.Key)
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
	w.b.landed, w.b.named = w.key, named
	w.b.mu.Unlock()
	return errClosed
}

func (b *landThenFail) Copy(ctx context.Context, dst, src string, _ *driver.CopyOptions) error {
	return b.inner.Copy(ctx, dst, src, nil)
}

func (b *landThenFail) Delete(ctx context.Context, key string, _ *driver.DeleteOptions) error {
	return b.inner.Delete(ctx, key)
}

func (b *landThenFail) SignedURL(context.Context, string, *driver.SignedURLOptions) (string, error) {
	return "", errors.New("no signed URLs")
}
