package objstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"

	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/faultproxy"
	"github.com/compactord/compactord/objstore"
)

const bucketName = "objstore-test"

// s3Server is gofakes3 on loopback recording each request's method, path
// and Range header.
type s3Server struct {
	url string
	mu  sync.Mutex
	log []string
	// stall, when it accepts a request, lets the first stallAfter bytes
	// of its response body through and then sends nothing more until the
	// client gives up on it.
	stall      func(*http.Request) bool
	stallAfter int
}

// stallingWriter passes limit bytes of a body, then blocks until done.
type stallingWriter struct {
	http.ResponseWriter
	limit int
	done  <-chan struct{}
}

func (w *stallingWriter) Write(p []byte) (int, error) {
	if len(p) <= w.limit {
		w.limit -= len(p)
		return w.ResponseWriter.Write(p)
	}
	n, _ := w.ResponseWriter.Write(p[:w.limit])
	w.limit = 0
	w.ResponseWriter.(http.Flusher).Flush()
	<-w.done
	return n, errors.New("stalled")
}

func (s *s3Server) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

func newS3(t *testing.T) *s3Server {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", "fake")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "fake")
	backend := s3mem.New()
	if err := backend.CreateBucket(bucketName); err != nil {
		t.Fatal(err)
	}
	inner := gofakes3.New(backend).Server()
	s := &s3Server{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.log = append(s.log, r.Method+" "+r.URL.Path+" "+r.Header.Get("Range"))
		stall := s.stall != nil && s.stall(r)
		s.mu.Unlock()
		if stall {
			w = &stallingWriter{ResponseWriter: w, limit: s.stallAfter, done: r.Context().Done()}
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func openS3(t *testing.T, endpoint string, opts objstore.Options) *blob.Bucket {
	t.Helper()
	q := url.Values{"endpoint": {endpoint}, "region": {"us-east-1"}, "use_path_style": {"true"}}
	b, err := blob.OpenBucket(context.Background(), "s3://"+bucketName+"?"+q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	w := objstore.Wrap(b, opts)
	t.Cleanup(func() { _ = w.Close() })
	return w
}

func fastOptions() objstore.Options {
	return objstore.Options{InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
}

// A body cut half way (the connection closed) or stalled half way (no
// byte for ReadIdleTimeout; the idle timer's cancellation is a timeout,
// not the caller's) is resumed from its first missing byte: one retry.
func TestABodyCutOrStalledHalfWayIsResumedFromTheFirstMissingByte(t *testing.T) {
	body := strings.Repeat("0123456789", 10000)
	tests := []struct {
		name string
		// fault sets the fault up on s and returns the endpoint and options.
		fault func(t *testing.T, s *s3Server) (string, objstore.Options)
	}{
		{name: "cut", fault: func(t *testing.T, s *s3Server) (string, objstore.Options) {
			p := faultproxy.New(t, s.url, faultproxy.Options{Rate: 1, Kinds: []faultproxy.Kind{faultproxy.CutBody},
				Match: faultproxy.FirstPerPath(http.MethodGet, "/obj")})
			return p.URL, fastOptions()
		}},
		{name: "stalled", fault: func(t *testing.T, s *s3Server) (string, objstore.Options) {
			s.mu.Lock()
			s.stall, s.stallAfter = faultproxy.FirstPerPath(http.MethodGet, "/obj"), len(body)/2
			s.mu.Unlock()
			opts := fastOptions()
			opts.ReadIdleTimeout, opts.MaxAttempts = 300*time.Millisecond, 3
			return s.url, opts
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s := newS3(t)
			plain := openS3(t, s.url, fastOptions())
			if err := plain.WriteAll(ctx, "obj", []byte(body), nil); err != nil {
				t.Fatal(err)
			}
			endpoint, opts := tt.fault(t, s)
			b := openS3(t, endpoint, opts)
			budget := objstore.NewBudget(10)
			got, err := b.ReadAll(objstore.WithBudget(ctx, budget), "obj")
			if err != nil {
				t.Fatalf("read of a body %s half way: %v", tt.name, err)
			}
			if string(got) != body {
				t.Fatalf("read %d bytes, want the %d written", len(got), len(body))
			}
			var gets []string
			for _, r := range s.requests() {
				if strings.HasPrefix(r, "GET ") {
					gets = append(gets, r)
				}
			}
			want := []string{"GET /" + bucketName + "/obj ", fmt.Sprintf("GET /%s/obj bytes=%d-", bucketName, len(body)/2)}
			if strings.Join(gets, "|") != strings.Join(want, "|") {
				t.Fatalf("GETs %q, want the whole object then the missing half %q", gets, want)
			}
			if budget.Used() != 1 {
				t.Fatalf("budget used %d, want 1", budget.Used())
			}
		})
	}
}

func TestWhatIsNotTransientIsNotRetried(t *testing.T) {
	ctx := context.Background()
	s := newS3(t)
	b := openS3(t, s.url, fastOptions())
	budget := objstore.NewBudget(10)
	_, err := b.ReadAll(objstore.WithBudget(ctx, budget), "missing")
	if gcerrors.Code(err) != gcerrors.NotFound {
		t.Fatalf("read of a missing object = %v, want NotFound", err)
	}
	if n := len(s.requests()); n != 1 || budget.Used() != 0 {
		t.Fatalf("%d requests and %d retries for a missing object, want 1 and 0", n, budget.Used())
	}
}

func TestAnEmptyBudgetStopsRetries(t *testing.T) {
	ctx := context.Background()
	s := newS3(t)
	p := faultproxy.New(t, s.url, faultproxy.Options{Rate: 1, Kinds: []faultproxy.Kind{faultproxy.CutBody},
		Match: faultproxy.FirstPerPath(http.MethodGet, "/obj")})
	b := openS3(t, p.URL, fastOptions())
	if err := b.WriteAll(ctx, "obj", []byte(strings.Repeat("x", 4096)), nil); err != nil {
		t.Fatal(err)
	}
	_, err := b.ReadAll(objstore.WithBudget(ctx, objstore.NewBudget(0)), "obj")
	if !errors.Is(err, objstore.ErrBudgetExhausted) {
		t.Fatalf("read with an empty budget = %v, want ErrBudgetExhausted", err)
	}
}

func TestAStoreThatNeverAnswersFailsWithinItsDeadline(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "fake")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "fake")
	ln := testutil.SilentEndpoint(t)
	opts := fastOptions()
	opts.MetadataTimeout, opts.OpenTimeout, opts.MaxAttempts = 200*time.Millisecond, 200*time.Millisecond, 2
	b := openS3(t, "http://"+ln, opts)
	for name, call := range map[string]func(context.Context) error{
		"attributes": func(ctx context.Context) error { _, err := b.Attributes(ctx, "k"); return err },
		"read":       func(ctx context.Context) error { _, err := b.ReadAll(ctx, "k"); return err },
		"list": func(ctx context.Context) error {
			_, err := b.List(nil).Next(ctx)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { done <- call(context.Background()) }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "no answer within 200ms") {
					t.Fatalf("call to a silent store = %v, want a deadline error", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("call to a silent store did not return within 30s (its deadline is 2 x 200ms)")
			}
		})
	}
}

func TestTransient(t *testing.T) {
	status := func(code int) error {
		return &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: code}}, Err: errors.New("api error")}}
	}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"500", status(500), true},
		{"503 SlowDown", status(503), true},
		{"429", status(429), true},
		{"403 is the request's fault", status(403), false},
		{"404", status(404), false},
		{"412", status(412), false},
		{"a 200 whose body failed", fmt.Errorf("deserialization failed: %w", &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 200}}, Err: io.ErrUnexpectedEOF}}), true},
		{"connection reset", fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{"cut body", io.ErrUnexpectedEOF, true},
		{"attempt timeout", context.DeadlineExceeded, true},
		{"caller cancelled", context.Canceled, false},
		{"corrupt content", errors.New("parquet: bad magic"), false},
		{"nil", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := objstore.Transient(tc.err); got != tc.want {
				t.Fatalf("Transient(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts objstore.Options
		ok   bool
	}{
		{"zero value takes defaults", objstore.Options{}, true},
		{"defaults", objstore.DefaultOptions(), true},
		{"negative timeout", objstore.Options{OpenTimeout: -time.Second}, false},
		{"negative attempts", objstore.Options{MaxAttempts: -1}, false},
		{"max backoff below initial", objstore.Options{InitialBackoff: time.Second, MaxBackoff: time.Millisecond}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, objstore.ErrInvalidOptions)) {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// An open that gets no answer within OpenTimeout is retried like any
// timeout, not given up as if the caller had canceled it: the second GET
// answers and the read succeeds, at the cost of one retry.
func TestAnOpenThatTimesOutIsRetried(t *testing.T) {
	ctx := context.Background()
	s := newS3(t)
	p := faultproxy.New(t, s.url, faultproxy.Options{Rate: 1, Kinds: []faultproxy.Kind{faultproxy.Delay},
		Delay: 3 * time.Second, Match: faultproxy.FirstPerPath(http.MethodGet, "/obj")})
	opts := fastOptions()
	opts.OpenTimeout, opts.MaxAttempts = 300*time.Millisecond, 3
	b := openS3(t, p.URL, opts)
	if err := b.WriteAll(ctx, "obj", []byte("payload"), nil); err != nil {
		t.Fatal(err)
	}
	budget := objstore.NewBudget(10)
	got, err := b.ReadAll(objstore.WithBudget(ctx, budget), "obj")
	if err != nil {
		t.Fatalf("read whose first GET is held past the open timeout: %v", err)
	}
	if string(got) != "payload" {
		t.Fatalf("read %q, want %q", got, "payload")
	}
	if budget.Used() != 1 {
		t.Fatalf("budget used %d, want the one retry", budget.Used())
	}
}

func TestCodeComesFromTheStatusWhenTheBodyDidNotArrive(t *testing.T) {
	// What the S3 SDK returns for an error answer whose body was cut: the
	// status, and no error code.
	cut := func(code int) error {
		return fmt.Errorf("operation error S3: PutObject: %w", &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: code}},
			Err:      fmt.Errorf("deserialization failed, failed to copy error response body, %w", io.ErrUnexpectedEOF)}})
	}
	tests := []struct {
		name string
		err  error
		want gcerrors.ErrorCode
	}{
		{"412", cut(412), gcerrors.FailedPrecondition},
		{"404", cut(404), gcerrors.NotFound},
		{"403", cut(403), gcerrors.PermissionDenied},
		{"409 without Azure's code stays unknown", cut(409), gcerrors.Unknown},
		{"500 stays unknown", cut(500), gcerrors.Unknown},
		{"no answer at all", io.ErrUnexpectedEOF, gcerrors.Unknown},
		{"the caller's cancellation", context.Canceled, gcerrors.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := objstore.Code(tc.err); got != tc.want {
				t.Fatalf("Code(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
	if objstore.Transient(cut(412)) || !objstore.Transient(cut(503)) {
		t.Fatal("a cut 412 must not be retried, a cut 503 must")
	}
}
