package stores

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// FakeS3Options shape an in-process S3 fake.
type FakeS3Options struct {
	// IgnoreIfNoneMatch strips If-None-Match from every request, so the
	// server behaves like a store without conditional creates.
	IgnoreIfNoneMatch bool
	// LosePutResponses makes the first N PUTs of keys under "_delta_log/"
	// reach the store but answer 500, as when a response is lost after the
	// write landed (the SDK then retries on its own).
	LosePutResponses int
	// FailPutsBeforeStore makes the first N PUTs of keys under
	// "_delta_log/" answer 500 without reaching the store.
	FailPutsBeforeStore int
	// EarlyPreconditionReply answers a conditional PUT of an existing key
	// with 412 before reading the body and closes the connection, as some
	// S3 servers do; with a large body the client may then see a broken
	// pipe instead of the 412.
	EarlyPreconditionReply bool
}

const preconditionXML = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message></Error>`

// FakeS3 is gofakes3 on a loopback httptest server with request counting.
// gofakes3 honours If-None-Match on single PUTs but not on multipart
// uploads: never use it to prove commit safety — that is versitygw's job.
type FakeS3 struct {
	// Endpoint is the server's base URL (http://127.0.0.1:port).
	Endpoint string

	backend gofakes3.Backend

	mu        sync.Mutex
	gets      map[string]int
	ranges    map[string][]string
	reads     []string // every GET in arrival order: object keys, "LIST" for listings
	requests  []string // every request since the last TakeRequests: "METHOD key"
	opts      FakeS3Options
	lost      int
	failed    int
	putsTotal int
}

// FakeS3Credentials sets the AWS credentials of the test to fake ones: the
// SDK signs every request, and the fake checks no signature.
func FakeS3Credentials(t testing.TB) {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", "fake")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "fake")
}

// NewFakeS3 starts a fake S3 server holding the bucket Bucket; it stops at
// the end of the test.
func NewFakeS3(t testing.TB, opts FakeS3Options) *FakeS3 {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(Bucket); err != nil {
		t.Fatal(err)
	}
	inner := gofakes3.New(backend).Server()
	f := &FakeS3{backend: backend, gets: map[string]int{}, ranges: map[string][]string{}, opts: opts}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.serve(inner, w, r)
	}))
	t.Cleanup(srv.Close)
	f.Endpoint = srv.URL
	return f
}

// Reads returns every read request so far in arrival order: the key of
// each object GET, "LIST" for each listing (HEADs, which the SDK also sends
// before deleting an object, are not reads of content).
func (f *FakeS3) Reads() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.reads...)
}

// TakeRequests returns every request since the last call, in arrival
// order, as "METHOD key" (key below the bucket, "" for a listing), and
// forgets them.
func (f *FakeS3) TakeRequests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.requests
	f.requests = nil
	return out
}

// URL returns an s3:// table URL for prefix on the fake.
func (f *FakeS3) URL(prefix string) string { return S3URL(f.Endpoint, Bucket, prefix) }

// GETs returns how many object GETs each key (path below the bucket)
// received so far.
func (f *FakeS3) GETs() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int, len(f.gets))
	for k, v := range f.gets {
		out[k] = v
	}
	return out
}

// Ranges returns the Range header of every GET of key so far ("" for a
// whole-object GET).
func (f *FakeS3) Ranges(key string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ranges[key]...)
}

func (f *FakeS3) serve(inner http.Handler, w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/"+Bucket), "/")
	isLogPut := r.Method == http.MethodPut && strings.Contains(key, "_delta_log/")
	f.mu.Lock()
	f.requests = append(f.requests, r.Method+" "+key)
	if r.Method == http.MethodGet && key != "" {
		f.gets[key]++
		f.ranges[key] = append(f.ranges[key], r.Header.Get("Range"))
	}
	if r.Method == http.MethodGet {
		if key == "" {
			f.reads = append(f.reads, "LIST")
		} else {
			f.reads = append(f.reads, key)
		}
	}
	if f.opts.IgnoreIfNoneMatch {
		r.Header.Del("If-None-Match")
	}
	lose, fail := false, false
	if isLogPut {
		f.putsTotal++
		if f.failed < f.opts.FailPutsBeforeStore {
			f.failed++
			fail = true
		} else if f.lost < f.opts.LosePutResponses {
			f.lost++
			lose = true
		}
	}
	f.mu.Unlock()
	if f.opts.EarlyPreconditionReply && r.Method == http.MethodPut && r.Header.Get("If-None-Match") == "*" {
		if _, err := f.backend.HeadObject(Bucket, key); err == nil {
			// Answer 412 on the raw connection and close it with the body
			// unread: the kernel resets the connection under the client's
			// upload, so the client usually sees a write error, not the 412.
			if hj, ok := w.(http.Hijacker); ok {
				conn, _, err := hj.Hijack()
				if err == nil {
					_, _ = conn.Write([]byte("HTTP/1.1 412 Precondition Failed\r\nContent-Type: application/xml\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(preconditionXML)) + "\r\n\r\n" + preconditionXML))
					_ = conn.Close()
					return
				}
			}
			w.Header().Set("Connection", "close")
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusPreconditionFailed)
			_, _ = w.Write([]byte(preconditionXML))
			return
		}
	}
	switch {
	case fail:
		http.Error(w, "injected failure before store", http.StatusInternalServerError)
	case lose:
		rec := httptest.NewRecorder()
		inner.ServeHTTP(rec, r)
		http.Error(w, "injected lost response", http.StatusInternalServerError)
	default:
		inner.ServeHTTP(w, r)
	}
}
