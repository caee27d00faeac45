package main

import (
	"net/http"
	"strings"
	"testing"
)

func TestWebPagesAreEmbeddedAndSelfContained(t *testing.T) {
	td := startTestDaemon(t, memPolicyDir(t, "a"))
	for _, c := range []struct {
		path, want string
		code       int
	}{
		{"/", `<table id="fleet"`, 200},
		{"/ui/fleet.js", "fetch(\"/status\"", 200},
		{"/ui/app.css", "svg.chart", 200},
		{"/tables/a", `id="run-now"`, 200},
		{"/tables/zzz", "no such table", 404},
	} {
		resp, err := http.Get(td.base + c.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		code, body := get(t, td.base+c.path)
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("GET %s: %d, body lacks %q", c.path, code, c.want)
		}
		if c.code == 200 && !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("GET %s: CSP %q", c.path, resp.Header.Get("Content-Security-Policy"))
		}
		if strings.Contains(body, "http://") || strings.Contains(body, "https://") {
			t.Errorf("GET %s names an outside URL", c.path)
		}
	}
	// The fake backend does not inspect: the page says so instead of charts.
	if _, body := get(t, td.base+"/tables/a"); !strings.Contains(body, "does not inspect tables") {
		t.Errorf("table page without Inspect:\n%s", body)
	}
}
