package main

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/objstore"
	"github.com/compactord/compactord/policies"
)

func TestAPollOfAStoreThatNeverAnswersIsAPollErrorAndSIGTERMStillStops(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", testutil.SilentEndpoint(t))
	dir := t.TempDir()
	writePolicy(t, dir, "events.hcl", "table \"events\" {\n  url = \"gs://lake/events\"\n}\n")
	sf := &storeFlags{budget: 10, opts: objstore.Options{
		MetadataTimeout: 300 * time.Millisecond, MaxAttempts: 2, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond,
	}}
	log := hclog.NewNullLogger()
	d, err := newDaemon(daemonOptions{PolicyDir: dir, clock: stillClock{now: time.Unix(1_700_000_000, 0)}}, log,
		func(dc policies.Daemon) backend { return newDeltaBackend(log, dc, sf) })
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.serve(ctx, make(chan os.Signal), ln) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("daemon did not stop within 30s of SIGTERM")
		}
	}()

	waitFor(t, "the poll to fail", func() bool {
		st := d.sched.Status()
		return len(st) == 1 && st[0].PollError != ""
	})
	st := d.sched.Status()[0]
	if !strings.Contains(st.PollError, "no answer within 300ms") {
		t.Fatalf("poll error %q, want the store deadline", st.PollError)
	}
	_, body := get(t, base+"/status")
	if !strings.Contains(body, `"poll_error"`) {
		t.Fatalf("/status does not show the poll error:\n%s", body)
	}
	_, metrics := get(t, base+"/metrics")
	if !strings.Contains(metrics, `compactord_poll_errors_total{table="events"} 1`) {
		t.Fatalf("metrics do not count the failed poll:\n%s", metrics)
	}
}
