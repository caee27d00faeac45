package faultproxy

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Kind is one kind of injected fault.
type Kind int

// The fault kinds, in the order Kinds lists them.
const (
	// InternalError answers 500 with S3's InternalError XML body; the
	// request never reaches the server.
	InternalError Kind = iota
	// SlowDown answers 503 with S3's SlowDown XML body (throttling); the
	// request never reaches the server.
	SlowDown
	// ResetBeforeResponse resets the connection without answering; the
	// request never reaches the server.
	ResetBeforeResponse
	// Delay holds the request for Options.Delay, then forwards it normally.
	Delay
	// LostResponse forwards the request (the server applies it) and then
	// resets the connection instead of answering.
	LostResponse
	// CutBody forwards the request and answers with the server's status and
	// headers (its full Content-Length) but only the first half of the
	// body, then closes the connection.
	CutBody
)

// Kinds is every fault kind.
var Kinds = []Kind{InternalError, SlowDown, ResetBeforeResponse, Delay, LostResponse, CutBody}

func (k Kind) String() string {
	switch k {
	case InternalError:
		return "500"
	case SlowDown:
		return "503-slowdown"
	case ResetBeforeResponse:
		return "reset-before-response"
	case Delay:
		return "delay"
	case LostResponse:
		return "lost-response"
	case CutBody:
		return "cut-body"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Options shape a Proxy. The zero value injects nothing.
type Options struct {
	// Rate is the probability in [0, 1] that a request is faulted.
	Rate float64
	// Kinds are the faults drawn from, uniformly (default: all of Kinds).
	Kinds []Kind
	// Delay is how long a Delay fault holds a request (default 500ms).
	Delay time.Duration
	// Seed seeds the fault draws, so a failing run can be replayed
	// (0: a random seed, reported by Seed).
	Seed uint64
	// Match, when set, limits faults to the requests it accepts.
	Match func(*http.Request) bool
	// CutStatus, when set, cuts the body of every answer with one of these
	// statuses (as CutBody does) to a request that Match accepts and Rate
	// did not fault: a fault chance plays no part in, such as a 412 whose
	// error body never arrives. Answers to HEAD and answers of fewer than
	// two body bytes go through whole. Cuts count as CutBody in Stats.
	CutStatus []int
}

// Proxy is a fault-injecting reverse proxy on a loopback port.
type Proxy struct {
	// URL is the proxy's base URL (http://127.0.0.1:port): use it as the
	// store's endpoint.
	URL string

	target    string
	transport *http.Transport

	mu       sync.Mutex
	opts     Options
	seed     uint64
	rng      *rand.Rand
	requests int
	faults   map[Kind]int
}

// New starts a proxy forwarding to target (a base URL such as
// http://127.0.0.1:7070); it stops at the end of the test.
func New(t testing.TB, target string, opts Options) *Proxy {
	t.Helper()
	p := &Proxy{
		target:    strings.TrimRight(target, "/"),
		transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true},
		faults:    map[Kind]int{},
	}
	p.setOptionsLocked(opts)
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		p.transport.CloseIdleConnections()
	})
	p.URL = srv.URL
	return p
}

// SetOptions changes the faults of later requests (e.g. none while a test
// sets a table up, then the rate under test).
func (p *Proxy) SetOptions(opts Options) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setOptionsLocked(opts)
}

func (p *Proxy) setOptionsLocked(opts Options) {
	if len(opts.Kinds) == 0 {
		opts.Kinds = Kinds
	}
	if opts.Delay <= 0 {
		opts.Delay = 500 * time.Millisecond
	}
	if opts.Seed == 0 {
		opts.Seed = rand.Uint64()
	}
	p.opts, p.seed = opts, opts.Seed
	p.rng = rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))
}

// Seed is the seed of the current options' fault draws.
func (p *Proxy) Seed() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seed
}

// Stats returns how many requests passed through and how many of each kind
// were faulted.
func (p *Proxy) Stats() (requests int, faults map[Kind]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[Kind]int, len(p.faults))
	for k, v := range p.faults {
		out[k] = v
	}
	return p.requests, out
}

// FaultsText is faults (as Stats returns them) in one line, every kind in
// the order of Kinds: "500=2 503-slowdown=0 ...".
func FaultsText(faults map[Kind]int) string {
	kinds := make([]string, 0, len(Kinds))
	for _, k := range Kinds {
		kinds = append(kinds, fmt.Sprintf("%v=%d", k, faults[k]))
	}
	return strings.Join(kinds, " ")
}

// draw decides the fault for r: ok is false when r is not faulted by
// Rate, and cut lists the answer statuses whose body is cut then.
func (p *Proxy) draw(r *http.Request) (k Kind, delay time.Duration, ok bool, cut []int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests++
	if p.opts.Rate <= 0 && len(p.opts.CutStatus) == 0 {
		return 0, 0, false, nil
	}
	if p.opts.Match != nil && !p.opts.Match(r) {
		return 0, 0, false, nil
	}
	if p.opts.Rate <= 0 || p.rng.Float64() >= p.opts.Rate {
		return 0, 0, false, p.opts.CutStatus
	}
	k = p.opts.Kinds[p.rng.IntN(len(p.opts.Kinds))]
	p.faults[k]++
	return k, p.opts.Delay, true, nil
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	kind, delay, faulted, cut := p.draw(r)
	if !faulted && len(cut) > 0 {
		p.forwardCutting(w, r, cut)
		return
	}
	if !faulted {
		p.forward(w, r)
		return
	}
	switch kind {
	case InternalError:
		writeS3Error(w, http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
	case SlowDown:
		writeS3Error(w, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
	case ResetBeforeResponse:
		// Read what the client sent, as a server that died mid-request has.
		_, _ = io.Copy(io.Discard, r.Body)
		reset(w)
	case Delay:
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		p.forward(w, r)
	case LostResponse:
		resp, err := p.roundTrip(r)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		reset(w)
	case CutBody:
		resp, err := p.roundTrip(r)
		if err != nil {
			reset(w)
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || len(body) < 2 || r.Method == http.MethodHead {
			// Nothing to cut: the answer is lost instead.
			reset(w)
			return
		}
		writeCut(w, resp, body)
	}
}

// roundTrip sends r to the target unchanged (path, query, headers, Host,
// body), as a signed request needs.
func (p *Proxy) roundTrip(r *http.Request) (*http.Response, error) {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.target+r.URL.RequestURI(), r.Body)
	if err != nil {
		return nil, err
	}
	out.Header = r.Header.Clone()
	out.Host = r.Host
	out.ContentLength = r.ContentLength
	if r.ContentLength == 0 {
		out.Body = http.NoBody
	}
	out.TransferEncoding = r.TransferEncoding
	return p.transport.RoundTrip(out)
}

// forward relays r and the server's whole answer.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request) {
	resp, err := p.roundTrip(r)
	if err != nil {
		http.Error(w, fmt.Sprintf("faultproxy: upstream: %v", err), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// forwardCutting relays r and the server's answer, whose body it cuts when
// the answer's status is one of cut.
func (p *Proxy) forwardCutting(w http.ResponseWriter, r *http.Request, cut []int) {
	resp, err := p.roundTrip(r)
	if err != nil {
		http.Error(w, fmt.Sprintf("faultproxy: upstream: %v", err), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		reset(w)
		return
	}
	if slices.Contains(cut, resp.StatusCode) && r.Method != http.MethodHead && len(body) >= 2 {
		p.mu.Lock()
		p.faults[CutBody]++
		p.mu.Unlock()
		writeCut(w, resp, body)
		return
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

func writeS3Error(w http.ResponseWriter, status int, code, msg string) {
	body := `<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<Error><Code>` + code + `</Code><Message>` + msg + `</Message><RequestId>faultproxy</RequestId></Error>`
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// reset closes the client's connection with a TCP RST and no answer.
func reset(w http.ResponseWriter) {
	conn, _, err := hijack(w)
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// writeCut writes resp's status and headers with the full Content-Length,
// then half of body, then closes the connection.
func writeCut(w http.ResponseWriter, resp *http.Response, body []byte) {
	conn, bw, err := hijack(w)
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(bw, "HTTP/1.1 %d %s\r\n", resp.StatusCode, http.StatusText(resp.StatusCode))
	h := resp.Header.Clone()
	h.Del("Transfer-Encoding")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Connection", "close")
	_ = h.Write(bw)
	_, _ = bw.WriteString("\r\n")
	_, _ = bw.Write(body[:len(body)/2])
	_ = bw.Flush()
}

func hijack(w http.ResponseWriter) (net.Conn, *bufio.Writer, error) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("faultproxy: %T cannot be hijacked", w)
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	return conn, rw.Writer, nil
}

// FirstPerPath returns a Match that accepts, once per URL path, the first
// request with this method whose path contains substr ("" matches every
// path): one fault per object, after which its retries go through.
func FirstPerPath(method, substr string) func(*http.Request) bool {
	var mu sync.Mutex
	seen := map[string]bool{}
	return func(r *http.Request) bool {
		if r.Method != method || !strings.Contains(r.URL.Path, substr) {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		if seen[r.URL.Path] {
			return false
		}
		seen[r.URL.Path] = true
		return true
	}
}
