package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
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
			{"GET", "/status", nil, http.StatusOK},
			{"GET", "/metrics", nil, http.StatusOK},
			{"GET", "/tables/a/plan", nil, http.StatusOK},
		}},
		{"every interface without a token file refuses every mutation", "0.0.0.0:0", "", []req{
			{"POST", "/tables/a/run", nil, http.StatusForbidden},
			{"POST", "/tables/a/run", bearer("anything"), http.StatusForbidden},
			{"POST", "/reload", nil, http.StatusForbidden},
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
