package main

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
)

// The HTTP listener binds loopback by default. Read-only pages need nothing;
// the mutating endpoints (POST /tables/{name}/run, POST /reload) refuse
// cross-origin browser requests on every listener (a page of another site
// must not be able to drive the daemon through an operator's browser, not
// even on loopback), and on a listener that is not loopback they also need
// "Authorization: Bearer <token>" with the token of --http-token-file. A
// non-loopback listener without a token file serves the read-only pages and
// refuses every mutation.

// readTokenFile reads the bearer token of --http-token-file (surrounding
// white space trimmed; an empty token is refused).
func readTokenFile(path string) (string, error) {
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

// isLoopback tells whether a listener's address is on the loopback network
// only (0.0.0.0 and :: are not: they listen on every interface).
func isLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
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
