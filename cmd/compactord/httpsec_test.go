package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/policies"
)

// TestMutatingEndpointsNeedATokenOffLoopbackAndRefuseCrossSite runs a real
// listener on loopback and one on every interface (dialled over loopback)
// and checks who may POST and who may read.
func TestMutatingEndpointsNeedATokenOffLoopbackAndRefuseCrossSite(t *testing.T) {
	dir := memPolicyDir(t, "a")
	tokenFile := tempFile(t, "s3cret-token\n")
	type req struct {
		method, path string
		header       map[string]string
		want         int
	}
	bearer := func(tok string, more ...string) map[string]string {
		h := map[string]string{"Authorization": "Bearer " + tok}
		for i := 0; i+1 < len(more); i += 2 {
			h[more[i]] = more[i+1]
		}
		return h
	}
	cases := []struct {
		name, addr, tokenFile string
		reqs                  []req
	}{
		{"loopback needs no token but refuses cross-site", "127.0.0.1:0", "", []req{
			{"POST", "/tables/a/run", nil, http.StatusAccepted},
			{"POST", "/tables/a/run", map[string]string{"Sec-Fetch-Site": "same-origin"}, http.StatusAccepted},
			{"POST", "/tables/a/run", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
			{"POST", "/tables/a/run", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
			{"POST", "/reload", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
			{"POST", "/reload", nil, http.StatusOK},
			{"POST", "/tables/a/resume", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
			{"POST", "/tables/a/resume", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
			{"POST", "/tables/a/resume", nil, http.StatusOK},
			{"GET", "/status", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusOK},
		}},
		{"every interface with a token file", "0.0.0.0:0", tokenFile, []req{
			{"POST", "/tables/a/run", nil, http.StatusUnauthorized},
			{"POST", "/tables/a/run", bearer("wrong"), http.StatusUnauthorized},
			{"POST", "/tables/a/run", map[string]string{"Authorization": "s3cret-token"}, http.StatusUnauthorized},
			{"POST", "/tables/a/run", bearer("s3cret-token"), http.StatusAccepted},
			{"POST", "/tables/a/run", bearer("s3cret-token", "Sec-Fetch-Site", "cross-site"), http.StatusForbidden},
			{"POST", "/tables/a/run", bearer("s3cret-token", "Origin", "http://evil.example"), http.StatusForbidden},
			{"POST", "/reload", nil, http.StatusUnauthorized},
			{"POST", "/reload", bearer("s3cret-token"), http.StatusOK},
			{"POST", "/tables/a/resume", nil, http.StatusUnauthorized},
			{"POST", "/tables/a/resume", bearer("s3cret-token", "Sec-Fetch-Site", "cross-site"), http.StatusForbidden},
			{"POST", "/tables/a/resume", bearer("s3cret-token"), http.StatusOK},
			{"GET", "/status", nil, http.StatusOK},
			{"GET", "/metrics", nil, http.StatusOK},
			{"GET", "/tables/a/plan", nil, http.StatusOK},
		}},
		{"every interface without a token file refuses every mutation", "0.0.0.0:0", "", []req{
			{"POST", "/tables/a/run", nil, http.StatusForbidden},
			{"POST", "/tables/a/run", bearer("anything"), http.StatusForbidden},
			{"POST", "/reload", nil, http.StatusForbidden},
			{"POST", "/tables/a/resume", nil, http.StatusForbidden},
			{"GET", "/status", nil, http.StatusOK},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fb := &fakeBackend{runs: map[string]int{}}
			td := startTestDaemonOpts(t, daemonOptions{PolicyDir: dir, HTTPTokenFile: c.tokenFile}, c.addr, fb, fb.backend())
			accepted := 0
			for _, r := range c.reqs {
				hr, err := http.NewRequest(r.method, td.base+r.path, nil)
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range r.header {
					hr.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(hr)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != r.want {
					t.Errorf("%s %s %v: %d, want %d", r.method, r.path, r.header, resp.StatusCode, r.want)
				}
				if r.path == "/tables/a/run" && resp.StatusCode == http.StatusAccepted {
					accepted++
				}
			}
			// Only accepted triggers may run the table (a refused one
			// must not have reached the scheduler).
			if accepted > 0 {
				waitFor(t, "the accepted runs", func() bool { return fb.count("a") >= 1 })
			}
			if n := fb.count("a"); n > accepted {
				t.Fatalf("table ran %d times after %d accepted triggers", n, accepted)
			}
		})
	}
}

func TestAnEmptyTokenFileFailsStartup(t *testing.T) {
	dir := memPolicyDir(t, "a")
	for _, f := range []string{tempFile(t, " \n"), filepath.Join(t.TempDir(), "missing")} {
		if _, err := newDaemon(daemonOptions{PolicyDir: dir, HTTPTokenFile: f}, hclog.NewNullLogger(), func(policies.Daemon) backend { return backend{} }); err == nil {
			t.Fatalf("newDaemon with token file %s: no error", f)
		}
	}
}

// memPolicyDir makes a policy directory with one mem:// table named name.
func memPolicyDir(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	writePolicy(t, dir, name+".hcl", fmt.Sprintf("table %q {\n  url = \"mem://%s\"\n}\n", name, name))
	return dir
}

// tempFile writes content to a new file of the test and returns its path.
func tempFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestALoopbackDaemonAnswersOnlyToALoopbackHost sends requests to a real
// loopback listener with the Host and Origin a DNS-rebinding page would
// send (its own name, now resolving to 127.0.0.1): refused, GET included,
// and the table never runs; loopback names and --http-allowed-host names
// are served. Off loopback the Host is not checked (the token is).
func TestALoopbackDaemonAnswersOnlyToALoopbackHost(t *testing.T) {
	dir := memPolicyDir(t, "a")
	type req struct {
		method, path, host, origin string
		want                       int
	}
	cases := []struct {
		name, addr string
		allowed    []string
		token      bool
		reqs       []req
	}{
		{"loopback", "127.0.0.1:0", nil, false, []req{
			{"POST", "/reload", "evil.example", "http://evil.example", http.StatusForbidden},
			{"POST", "/tables/a/resume", "evil.example", "", http.StatusForbidden},
			{"POST", "/tables/a/run", "evil.example", "http://evil.example", http.StatusForbidden},
			{"POST", "/tables/a/run", "evil.example:PORT", "http://evil.example:PORT", http.StatusForbidden},
			{"POST", "/tables/a/run", "127.0.0.1.evil.example:PORT", "", http.StatusForbidden},
			{"GET", "/status", "evil.example:PORT", "", http.StatusForbidden},
			{"GET", "/", "evil.example", "", http.StatusForbidden},
			{"GET", "/tables/a", "evil.example", "", http.StatusForbidden},
			{"GET", "/tables/a/plan", "evil.example", "", http.StatusForbidden},
			{"GET", "/metrics", "tunnel.example", "", http.StatusForbidden},
			{"POST", "/tables/a/run", "127.0.0.1:PORT", "http://127.0.0.1:PORT", http.StatusAccepted},
			{"POST", "/reload", "127.0.0.1:PORT", "", http.StatusOK},
			{"GET", "/status", "localhost:PORT", "", http.StatusOK},
			{"GET", "/status", "LocalHost.:PORT", "", http.StatusOK},
			{"GET", "/status", "[::1]:PORT", "", http.StatusOK},
			{"GET", "/status", "127.0.0.2", "", http.StatusOK},
		}},
		{"loopback with an allowed host", "127.0.0.1:0", []string{"Tunnel.Example"}, false, []req{
			{"POST", "/tables/a/run", "tunnel.example:8443", "http://tunnel.example:8443", http.StatusAccepted},
			{"GET", "/status", "tunnel.example", "", http.StatusOK},
			{"POST", "/tables/a/run", "evil.example", "http://evil.example", http.StatusForbidden},
			{"GET", "/status", "other.tunnel.example", "", http.StatusForbidden},
		}},
		{"every interface keeps the token rules", "0.0.0.0:0", nil, true, []req{
			{"GET", "/status", "compactord.internal:9464", "", http.StatusOK},
			{"POST", "/tables/a/run", "compactord.internal:9464", "", http.StatusAccepted},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := daemonOptions{PolicyDir: dir, HTTPAllowedHosts: c.allowed}
			if c.token {
				o.HTTPTokenFile = tempFile(t, "tok")
			}
			fb := &fakeBackend{runs: map[string]int{}}
			td := startTestDaemonOpts(t, o, c.addr, fb, fb.backend())
			port := td.base[strings.LastIndex(td.base, ":")+1:]
			accepted := 0
			for _, r := range c.reqs {
				host := strings.ReplaceAll(r.host, "PORT", port)
				origin := strings.ReplaceAll(r.origin, "PORT", port)
				hr, err := http.NewRequest(r.method, td.base+r.path, nil)
				if err != nil {
					t.Fatal(err)
				}
				hr.Host = host
				if origin != "" {
					hr.Header.Set("Origin", origin)
				}
				if c.token {
					hr.Header.Set("Authorization", "Bearer tok")
				}
				resp, err := http.DefaultClient.Do(hr)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != r.want {
					t.Errorf("%s %s Host %q Origin %q: %d, want %d: %s", r.method, r.path, host, origin, resp.StatusCode, r.want, body)
				}
				if resp.StatusCode == http.StatusForbidden && !strings.Contains(string(body), "answers only to Host localhost") {
					t.Errorf("%s %s Host %q: the refusal does not say why: %s", r.method, r.path, host, body)
				}
				if r.path == "/tables/a/run" && resp.StatusCode == http.StatusAccepted {
					accepted++
				}
			}
			if !c.token {
				// An HTTP/1.0 request may carry no Host at all.
				conn, err := net.Dial("tcp", strings.TrimPrefix(td.base, "http://"))
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.WriteString(conn, "GET /status HTTP/1.0\r\n\r\n")
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				conn.Close()
				if resp.StatusCode != http.StatusForbidden {
					t.Errorf("GET /status without a Host: %d, want 403", resp.StatusCode)
				}
			}
			if accepted > 0 {
				waitFor(t, "the accepted runs", func() bool { return fb.count("a") >= 1 })
			}
			if n := fb.count("a"); n > accepted {
				t.Fatalf("table ran %d times after %d accepted triggers", n, accepted)
			}
		})
	}
}

func TestABadAllowedHostFailsStartup(t *testing.T) {
	dir := memPolicyDir(t, "a")
	for _, h := range []string{"", "http://x.example", "x.example/path", "user@x.example", "a b", ":8080"} {
		_, err := newDaemon(daemonOptions{PolicyDir: dir, HTTPAllowedHosts: []string{h}}, hclog.NewNullLogger(), func(policies.Daemon) backend { return backend{} })
		if err == nil || !strings.Contains(err.Error(), "--http-allowed-host") {
			t.Errorf("--http-allowed-host %q: err %v, want a refusal naming the flag", h, err)
		}
	}
	if _, err := parseDaemonFlags(commandNamed("run").flags(context.Background(), io.Discard), []string{"--policies", dir, "--http-allowed-host", "a.example", "--http-allowed-host", "b.example"}); err != nil {
		t.Fatal(err)
	}
	o, _ := parseDaemonFlags(commandNamed("run").flags(context.Background(), io.Discard), []string{"--policies", dir, "--http-allowed-host", "a.example", "--http-allowed-host", "b.example"})
	if len(o.HTTPAllowedHosts) != 2 || o.HTTPAllowedHosts[1] != "b.example" {
		t.Fatalf("the flag repeated gives %v", o.HTTPAllowedHosts)
	}
}
