package objstore_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"gocloud.dev/blob"

	"github.com/compactord/compactord/internal/testutil/faultproxy"
	"github.com/compactord/compactord/objstore"
)

// firstPuts accepts the first n PUTs of each path containing substr.
func firstPuts(substr string, n int) func(*http.Request) bool {
	var mu sync.Mutex
	seen := map[string]int{}
	return func(r *http.Request) bool {
		if r.Method != http.MethodPut || !strings.Contains(r.URL.Path, substr) {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		seen[r.URL.Path]++
		return seen[r.URL.Path] <= n
	}
}

// The S3 SDK sends a PUT three times at most. A write up to
// WholeWriteLimit, streamed or uploaded, is retried whole beyond that; a
// conditional create is not (its caller settles whether a lost one landed),
// and an abandoned write sends nothing.
func TestAWriteIsRetriedWholeUnlessConditionalOrAbandoned(t *testing.T) {
	ctx := context.Background()
	small := bytes.Repeat([]byte("x"), 64<<10)
	tests := []struct {
		name    string
		write   func(b *blob.Bucket) error
		wantErr bool
	}{
		{name: "streamed", write: func(b *blob.Bucket) error {
			w, err := b.NewWriter(ctx, "obj", &blob.WriterOptions{ContentType: "application/octet-stream"})
			if err != nil {
				return err
			}
			for i := 0; i < 4; i++ {
				if _, err := w.Write(small[:len(small)/4]); err != nil {
					return err
				}
			}
			return w.Close()
		}},
		{name: "WriteAll", write: func(b *blob.Bucket) error {
			return b.WriteAll(ctx, "obj", small, nil)
		}},
		{name: "Upload", write: func(b *blob.Bucket) error {
			return b.Upload(ctx, "obj", bytes.NewReader(small), &blob.WriterOptions{ContentType: "application/octet-stream"})
		}},
		{name: "conditional create", wantErr: true, write: func(b *blob.Bucket) error {
			return b.Upload(ctx, "obj", bytes.NewReader(small), &blob.WriterOptions{ContentType: "application/octet-stream", IfNotExist: true})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newS3(t)
			p := faultproxy.New(t, s.url, faultproxy.Options{Rate: 1, Kinds: []faultproxy.Kind{faultproxy.InternalError},
				Match: firstPuts("/obj", 3)})
			b := openS3(t, p.URL, fastOptions())
			err := tt.write(b)
			if tt.wantErr {
				if err == nil {
					t.Fatal("a conditional create was retried past the SDK's attempts")
				}
				return
			}
			if err != nil {
				t.Fatalf("three failed PUTs in a row failed the write: %v", err)
			}
			got, err := b.ReadAll(ctx, "obj")
			if err != nil || !bytes.Equal(got, small) {
				t.Fatalf("read back %d bytes (%v), want %d", len(got), err, len(small))
			}
		})
	}

	t.Run("abandoned", func(t *testing.T) {
		s := newS3(t)
		b := openS3(t, s.url, fastOptions())
		wctx, cancel := context.WithCancel(ctx)
		w, err := b.NewWriter(wctx, "obj", &blob.WriterOptions{ContentType: "application/octet-stream"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(small); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := w.Close(); err == nil {
			t.Fatal("an abandoned write closed without an error")
		}
		if ok, err := b.Exists(ctx, "obj"); err != nil || ok {
			t.Fatalf("an abandoned write left the object (exists %v, %v)", ok, err)
		}
	})

	t.Run("over the limit", func(t *testing.T) {
		// Streamed in parts, not held: the SDK retries each part, and the
		// object still arrives whole.
		s := newS3(t)
		b := openS3(t, s.url, fastOptions())
		big := bytes.Repeat([]byte("0123456789abcdef"), (objstore.WholeWriteLimit+1<<20)/16)
		w, err := b.NewWriter(ctx, "big", &blob.WriterOptions{ContentType: "application/octet-stream"})
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off < len(big); off += 1 << 20 {
			if _, err := w.Write(big[off:min(off+1<<20, len(big))]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := b.ReadAll(ctx, "big")
		if err != nil || !bytes.Equal(got, big) {
			t.Fatalf("read back %d bytes (%v), want %d", len(got), err, len(big))
		}
	})
}
