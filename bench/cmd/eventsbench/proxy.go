package main

import (
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Request classes counted at the store.
const (
	clsGET = iota
	clsHEAD
	clsLIST
	clsPUT
	clsOther // DELETE, POST, anything else
	nClasses
)

var classNames = [nClasses]string{"GET", "HEAD", "LIST", "PUT", "OTHER"}

// counts are request counts by class.
type counts [nClasses]int64

func (c *counts) add(o counts) {
	for i := range c {
		c[i] += o[i]
	}
}

func (c counts) total() int64 {
	var n int64
	for _, v := range c {
		n += v
	}
	return n
}

// counter is the reverse proxy between the daemon and versitygw: it
// forwards every request as it came (the Host header too, so that the
// SigV4 signatures stay valid) and counts it by class, by minute of the
// measured window, and as idle or not (a request for a table that the
// window has not written yet).
type counter struct {
	proxy  *httputil.ReverseProxy
	bucket string

	mu      sync.Mutex
	start   time.Time // window start; zero: not measuring
	end     time.Time
	written map[string]time.Time // table -> its first write in the window
	perMin  []counts             // every request of the window, by minute
	idleMin []counts             // the idle ones, by minute
	outside counts               // in no table (bucket HEAD, ...)
	// seen is when each commit key was first answered 2xx to the daemon.
	seen map[string]time.Time
}

func newCounter(target *url.URL, bucket string) *counter {
	c := &counter{bucket: bucket, written: map[string]time.Time{}, seen: map[string]time.Time{}}
	p := httputil.NewSingleHostReverseProxy(target)
	dir := p.Director
	p.Director = func(r *http.Request) {
		host := r.Host
		dir(r)
		r.Host = host // signed
	}
	p.ModifyResponse = func(resp *http.Response) error {
		c.record(resp.Request, resp.StatusCode, time.Now())
		return nil
	}
	c.proxy = p
	return c
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.proxy.ServeHTTP(w, r) }

// measure starts a window of the given length: the counts so far are
// forgotten.
func (c *counter) measure(start time.Time, length time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.start, c.end = start, start.Add(length)
	n := int((length + time.Minute - 1) / time.Minute)
	c.perMin = make([]counts, n)
	c.idleMin = make([]counts, n)
	c.outside = counts{}
	c.written = map[string]time.Time{}
	c.seen = map[string]time.Time{}
}

// wrote notes the first write of a table in the window.
func (c *counter) wrote(table string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.written[table]; !ok {
		c.written[table] = at
	}
}

// firstSeen is when key was first answered 2xx to the daemon.
func (c *counter) firstSeen(key string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.seen[key]
	return t, ok
}

// classify returns a request's class, its object key or listing prefix.
func (c *counter) classify(r *http.Request) (int, string) {
	p := strings.TrimPrefix(r.URL.Path, "/")
	key := ""
	if rest, ok := strings.CutPrefix(p, c.bucket+"/"); ok {
		key = rest
	}
	switch r.Method {
	case http.MethodGet:
		q := r.URL.Query()
		if key == "" && (q.Has("list-type") || q.Has("prefix") || len(q) == 0) {
			return clsLIST, q.Get("prefix")
		}
		return clsGET, key
	case http.MethodHead:
		return clsHEAD, key
	case http.MethodPut:
		return clsPUT, key
	}
	return clsOther, key
}

// tableOf is the table of a key under lake/ ("" when none).
func tableOf(key string) string {
	rest, ok := strings.CutPrefix(key, lakePrefix)
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}

func (c *counter) record(r *http.Request, status int, now time.Time) {
	cls, key := c.classify(r)
	table := tableOf(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	if status/100 == 2 && strings.Contains(key, "/_delta_log/") && strings.HasSuffix(key, ".json") {
		if _, ok := c.seen[key]; !ok {
			c.seen[key] = now
		}
	}
	if c.start.IsZero() || now.Before(c.start) || !now.Before(c.end) {
		return
	}
	m := int(now.Sub(c.start) / time.Minute)
	if table == "" {
		c.outside[cls]++
		c.perMin[m][cls]++
		return
	}
	c.perMin[m][cls]++
	if w, ok := c.written[table]; !ok || now.Before(w) {
		c.idleMin[m][cls]++
	}
}

// result is what a window counted.
type result struct {
	perMin, idleMin []counts
	outside         counts
	// idleTableMinutes is the sum over tables of the window's minutes
	// before their first write.
	idleTableMinutes float64
	written          int
}

func (c *counter) result(tables []string) result {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := result{perMin: append([]counts(nil), c.perMin...), idleMin: append([]counts(nil), c.idleMin...), outside: c.outside, written: len(c.written)}
	for _, t := range tables {
		end := c.end
		if w, ok := c.written[t]; ok && w.Before(end) {
			end = w
		}
		r.idleTableMinutes += end.Sub(c.start).Minutes()
	}
	return r
}
