package httpapi

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
)

// The HTTP listener binds loopback by default. A loopback listener answers
// only requests whose Host is a loopback name (localhost, a loopback address
// such as 127.0.0.1 or [::1], any port) or one of --http-allowed-host: a
// page of another site that rebinds its own name to 127.0.0.1 (DNS
// rebinding) is same-origin with itself, so the Origin check below cannot
// see it, but its requests carry the attacker's Host and are refused, GET
// included (the pages and /status name every table). Read-only pages need
// nothing more; the mutating endpoints (POST /tables/{name}/run, POST /tables/{name}/resume, POST /reload) refuse
// cross-origin browser requests on every listener (a page of another site
// must not be able to drive the daemon through an operator's browser, not
// even on loopback), and on a listener that is not loopback they also need
// "Authorization: Bearer <token>" with the token of --http-token-file. A
// non-loopback listener without a token file serves the read-only pages and
// refuses every mutation.

// ReadTokenFile reads the bearer token of --http-token-file (surrounding
// white space trimmed; an empty token is refused).
func ReadTokenFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read --http-token-file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("--http-token-file %s is empty", path)
	}
	return tok, nil
}

// IsLoopback tells whether a listener's address is on the loopback network
// only (0.0.0.0 and :: are not: they listen on every interface).
func IsLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// AllowedHosts checks and canonicalises the names of --http-allowed-host: a
// host name or address, no scheme (a port is ignored: every port of an
// allowed name is allowed, as for localhost).
func AllowedHosts(names []string) (map[string]bool, error) {
	hosts := map[string]bool{}
	for _, n := range names {
		h := hostName(n)
		if strings.ContainsAny(n, "/@ ") || h == "" || strings.Contains(h, ":") && net.ParseIP(h) == nil {
			return nil, fmt.Errorf("--http-allowed-host %q: want a host name or address (no scheme, path or userinfo)", n)
		}
		hosts[h] = true
	}
	return hosts, nil
}

// hostName is the host of a Host header or a name, without its port and
// the brackets of an IPv6 address, lower case, without a trailing dot.
func hostName(hostport string) string {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// loopbackHost reports whether a request's Host names this machine's
// loopback interface: localhost, a loopback address, or an allowed name.
func loopbackHost(host string, allowed map[string]bool) bool {
	h := hostName(host)
	if h == "localhost" || allowed[h] {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// hostGuard answers 403 to every request whose Host is not a loopback name
// (loopbackHost); the daemon puts it in front of a loopback listener only.
func hostGuard(allowed map[string]bool, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host, allowed) {
			writeJSON(w, http.StatusForbidden, map[string]string{"error": "request refused: this daemon listens on loopback and answers only to Host localhost, 127.0.0.1 or [::1] (any port) and the names of --http-allowed-host; " +
				"another name may be a DNS-rebinding page"})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// mutationGuard protects the mutating endpoints.
type mutationGuard struct {
	// needToken is set when the listener is not loopback.
	needToken bool
	// token is the bearer token ("" when there is no token file).
	token string
	cop   *http.CrossOriginProtection
}

func newMutationGuard(loopback bool, token string) *mutationGuard {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "cross-origin request refused: mutating endpoints accept only same-origin or non-browser requests"})
	}))
	return &mutationGuard{needToken: !loopback, token: token, cop: cop}
}

// wrap returns h behind the cross-origin check and, off loopback, the token.
func (g *mutationGuard) wrap(h http.HandlerFunc) http.Handler {
	return g.cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.needToken {
			if g.token == "" {
				writeJSON(w, http.StatusForbidden, map[string]string{"error": "mutating endpoints are off: the listener is not loopback and the daemon has no --http-token-file"})
				return
			}
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(g.token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="compactord"`)
				writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "a bearer token (--http-token-file) is required"})
				return
			}
		}
		h(w, r)
	}))
}
