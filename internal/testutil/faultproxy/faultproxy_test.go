package faultproxy

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const payload = "0123456789abcdefghijklmnopqrstuvwxyz"

// upstream counts the requests that reached it and answers payload.
func upstream(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("ETag", `"e1"`)
		_, _ = io.WriteString(w, payload)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestEachKindDoesWhatItSays(t *testing.T) {
	tests := []struct {
		kind        Kind
		wantStatus  int    // 0: no response
		wantBody    string // checked when the read succeeds
		wantReached bool   // the server applied the request
		wantReadErr bool   // the body read fails
	}{
		{kind: InternalError, wantStatus: 500, wantBody: "<Code>InternalError</Code>"},
		{kind: SlowDown, wantStatus: 503, wantBody: "<Code>SlowDown</Code>"},
		{kind: ResetBeforeResponse},
		{kind: Delay, wantStatus: 200, wantBody: payload, wantReached: true},
		{kind: LostResponse, wantReached: true},
		{kind: CutBody, wantStatus: 200, wantReached: true, wantReadErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.kind.String(), func(t *testing.T) {
			srv, reached := upstream(t)
			p := New(t, srv.URL, Options{Rate: 1, Kinds: []Kind{tc.kind}, Delay: 50 * time.Millisecond})
			client := &http.Client{Transport: &http.Transport{}}
			start := time.Now()
			resp, err := client.Post(p.URL+"/bucket/key", "text/plain", strings.NewReader("request body"))
			if tc.wantStatus == 0 {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("got a %d response, want the connection to fail", resp.StatusCode)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				if resp.StatusCode != tc.wantStatus {
					t.Fatalf("status %d, want %d", resp.StatusCode, tc.wantStatus)
				}
				body, rerr := io.ReadAll(resp.Body)
				switch {
				case tc.wantReadErr && !errors.Is(rerr, io.ErrUnexpectedEOF):
					t.Fatalf("body read = %q, %v; want it cut (unexpected EOF)", body, rerr)
				case tc.wantReadErr && string(body) != payload[:len(payload)/2]:
					t.Fatalf("cut body = %q, want the first half of %q", body, payload)
				case !tc.wantReadErr && (rerr != nil || !strings.Contains(string(body), tc.wantBody)):
					t.Fatalf("body = %q, %v; want it to contain %q", body, rerr, tc.wantBody)
				}
			}
			if got := reached.Load() == 1; got != tc.wantReached {
				t.Fatalf("request reached the server: %v, want %v", got, tc.wantReached)
			}
			if tc.kind == Delay && time.Since(start) < 50*time.Millisecond {
				t.Fatalf("delayed response came after %v, want at least 50ms", time.Since(start))
			}
			if _, faults := p.Stats(); faults[tc.kind] != 1 {
				t.Fatalf("faults = %v, want one %v", faults, tc.kind)
			}
		})
	}
}

func TestRateIsHonoured(t *testing.T) {
	srv, _ := upstream(t)
	p := New(t, srv.URL, Options{Rate: 0.2, Kinds: []Kind{InternalError}, Seed: 42})
	const n = 500
	failed := 0
	for i := 0; i < n; i++ {
		resp, err := http.Get(p.URL + "/k")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 500 {
			failed++
		}
	}
	// Binomial(500, 0.2): mean 100, sd ~9; the seed is fixed, so this is
	// deterministic, and the bound is wide.
	if failed < 60 || failed > 140 {
		t.Fatalf("%d of %d requests faulted at rate 0.2", failed, n)
	}
	if reqs, faults := p.Stats(); reqs != n || faults[InternalError] != failed {
		t.Fatalf("stats: %d requests, %v; want %d and %d", reqs, faults, n, failed)
	}
}

func TestZeroRatePassesEverything(t *testing.T) {
	srv, reached := upstream(t)
	p := New(t, srv.URL, Options{})
	for i := 0; i < 20; i++ {
		resp, err := http.Get(p.URL + "/k")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != payload || resp.Header.Get("ETag") != `"e1"` {
			t.Fatalf("forwarded answer %q (ETag %q), want the server's", body, resp.Header.Get("ETag"))
		}
	}
	if reached.Load() != 20 {
		t.Fatalf("%d requests reached the server, want 20", reached.Load())
	}
}

func TestCutStatusCutsEveryAnswerOfThatStatusAndNoOther(t *testing.T) {
	const refusal = "<Error><Code>PreconditionFailed</Code></Error>"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if strings.HasSuffix(r.URL.Path, "/taken") {
			w.WriteHeader(http.StatusPreconditionFailed)
			_, _ = io.WriteString(w, refusal)
			return
		}
		_, _ = io.WriteString(w, payload)
	}))
	t.Cleanup(srv.Close)
	p := New(t, srv.URL, Options{CutStatus: []int{http.StatusPreconditionFailed},
		Match: func(r *http.Request) bool { return r.Method == http.MethodPut }})
	client := &http.Client{Transport: &http.Transport{}}
	send := func(method, path string) (int, string, error) {
		req, err := http.NewRequest(method, p.URL+path, strings.NewReader("request body"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	for i := 0; i < 3; i++ {
		status, body, err := send(http.MethodPut, "/bucket/taken")
		if status != http.StatusPreconditionFailed || !errors.Is(err, io.ErrUnexpectedEOF) || body != refusal[:len(refusal)/2] {
			t.Fatalf("PUT %d: %d %q %v; want 412 with the first half of its body, then unexpected EOF", i, status, body, err)
		}
	}
	if status, body, err := send(http.MethodPut, "/bucket/free"); status != 200 || body != payload || err != nil {
		t.Fatalf("PUT of a free key: %d %q %v; want the whole answer", status, body, err)
	}
	if status, body, err := send(http.MethodGet, "/bucket/taken"); status != 412 || body != refusal || err != nil {
		t.Fatalf("GET Match refuses: %d %q %v; want the whole answer", status, body, err)
	}
	if reqs, faults := p.Stats(); reqs != 5 || faults[CutBody] != 3 || len(faults) != 1 {
		t.Fatalf("stats: %d requests, %v; want 5 and three cut bodies", reqs, faults)
	}
}

// The one-line text of the fault counts names every kind in the order of
// Kinds, the kinds that never struck with 0.
func TestFaultsTextNamesEveryKindInOrder(t *testing.T) {
	got := FaultsText(map[Kind]int{CutBody: 3, InternalError: 2})
	want := "500=2 503-slowdown=0 reset-before-response=0 delay=0 lost-response=0 cut-body=3"
	if got != want {
		t.Fatalf("FaultsText = %q, want %q", got, want)
	}
}
