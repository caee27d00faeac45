package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compactord/compactord/internal/logging"
	"github.com/compactord/compactord/internal/testutil"
)

// TestNoSecretOfATableURLLeavesTheDaemon runs the real daemon (its logger,
// the Delta backend, the HTTP server) over tables whose URLs carry
// credentials: userinfo on real tables that load (S3, local) and on ones
// that do not (an empty mem table), and credential query parameters
// (access_key, secret_key, an Azure SAS sig) on tables that fail to open.
// After polls, runs and plans, no secret appears in /status, any
// /tables/<name> page, any plan, the fleet page, /metrics or the log.
func TestNoSecretOfATableURLLeavesTheDaemon(t *testing.T) {
	t.Setenv("AZURE_STORAGE_ACCOUNT", "acct")
	s3 := fakeS3WithEvents(t)
	s3URL := strings.Replace(s3.URL("events"), "s3://", "s3://s3user:S3PASS@", 1)
	local := testutil.CopyDeltaTable(t, "dv-small")

	secrets := []string{"s3user", "S3PASS", "fileuser", "FILEPASS", "memuser", "MEMPASS", "AKIAXXXX", "S3CR3T",
		"emptyuser", "EMPTYPASS", "azuser", "AZPASS", "SIGSECRET"}
	tables := map[string]string{
		"events": s3URL,
		"local":  "file://fileuser:FILEPASS@" + filepath.ToSlash(local),
		"keys":   "mem://memuser:MEMPASS@keys?access_key=AKIAXXXX&secret_key=S3CR3T",
		"empty":  "mem://emptyuser:EMPTYPASS@empty",
		"azure":  "azblob://azuser:AZPASS@container/t?sv=2022-11-02&se=2030-01-01T00%3A00%3A00Z&sp=rwdl&sig=SIGSECRET%3D",
	}
	dir := t.TempDir()
	for name, u := range tables {
		writePolicy(t, dir, name+".hcl", fmt.Sprintf("table %q {\n  url = %q\n  settle_window = \"0s\"\n}\n", name, u))
	}

	var logs testutil.SyncBuffer
	log := logging.New(&logs, "json", "debug")
	d, base, cancel, done := serveDeltaDaemon(t, dir, log, nil)
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	defer stop()

	waitFor(t, "every table's first poll", func() bool {
		st := d.Scheduler().Status()
		if len(st) != len(tables) {
			return false
		}
		for _, s := range st {
			if s.Backlog == nil && s.PollError == "" {
				return false
			}
		}
		return true
	})
	for _, name := range []string{"events", "local", "empty"} {
		resp, err := http.Post(base+"/tables/"+name+"/run", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	waitFor(t, "the triggered runs", func() bool {
		n := 0
		for _, s := range d.Scheduler().Status() {
			if s.LastRun != nil {
				n++
			}
		}
		return n >= 2 // the empty mem table cannot run: its poll failed
	})

	pages := map[string]string{}
	for _, p := range []string{"/status", "/metrics", "/"} {
		_, pages[p] = get(t, base+p)
	}
	for name := range tables {
		for _, p := range []string{"/tables/" + name, "/tables/" + name + "/plan"} {
			_, pages[p] = get(t, base+p)
		}
	}
	stop() // the log is complete
	pages["log"] = logs.String()

	// The test proves something only if the URLs reached the outputs.
	for what, want := range map[string]string{
		"/status":             `"url": "s3://REDACTED@`,
		"/tables/keys":        "access_key=REDACTED",
		"/tables/azure":       "sig=REDACTED",
		"/tables/empty/plan":  "mem://REDACTED@empty",
		"/tables/events/plan": `"jobs"`,
		"log":                 "s3://REDACTED@",
	} {
		if !strings.Contains(pages[what], want) {
			t.Errorf("%s does not show %q:\n%s", what, want, pages[what])
		}
	}
	for what, body := range pages {
		for _, s := range secrets {
			if i := strings.Index(body, s); i >= 0 {
				t.Errorf("%s shows the secret %q: …%s…", what, s, body[max(0, i-120):min(len(body), i+80)])
			}
		}
	}
}
