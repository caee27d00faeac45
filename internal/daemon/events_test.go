package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gocloud.dev/pubsub"

	"github.com/compactord/compactord/internal/daemon"
	"github.com/compactord/compactord/internal/httpapi"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/stores"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/runner"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, 20*time.Second, 5*time.Millisecond, what, cond)
}

func s3Event(key string) []byte {
	return fmt.Appendf(nil, `{"Records":[{"eventVersion":"2.1","eventSource":"aws:s3","eventName":"ObjectCreated:Put","s3":{"bucket":{"name":%q},"object":{"key":%q}}}]}`, stores.Bucket, key)
}

func TestADaemonWithAnEventsBlockPollsATableOnItsCommitEventAndCountsTheRest(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	f := stores.NewFakeS3(t, stores.FakeS3Options{})
	url := f.URL("lake/t")
	tbl := tabletest.NewTable(t, url, []int64{1})

	ctx := context.Background()
	topicURL := "mem://daemon-events-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	topic, err := pubsub.OpenTopic(ctx, topicURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = topic.Shutdown(ctx) })

	dir := t.TempDir()
	files := map[string]string{
		"daemon.hcl": fmt.Sprintf("daemon {\n  events {\n    url = %q\n  }\n}\n", topicURL),
		"t.hcl":      fmt.Sprintf("table \"t\" {\n  url = %q\n}\n", url),
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	log := tabletest.Logger(t)
	be := daemon.RunnerBackend(&runner.Backend{Tables: runner.NewTables(), Logger: log.Named("run")})
	d, err := daemon.New(daemon.Options{PolicyDir: dir, HTTP: "off", Version: "test"}, log, func(policies.Daemon) daemon.Backend { return be })
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Serve(sctx, nil, nil) }()
	t.Cleanup(func() { cancel(); <-done })
	lastSeen := func() int64 {
		st := d.Scheduler().Status()
		if len(st) != 1 {
			return -2
		}
		return st[0].LastVersion
	}
	waitFor(t, "the first poll", func() bool { return lastSeen() == 0 })

	add := tabletest.WriteDataFile(t, tbl, []int64{2})
	tabletest.PutCommit(t, tbl, 1, []string{tabletest.AddLine(t, add)})
	// The reconciling poll is 10 minutes away: only the event can make the
	// daemon read version 1. It is sent until the subscription, opened in
	// the background, has it (a mem topic keeps nothing for later).
	waitFor(t, "version 1 noticed through its event", func() bool {
		if err := topic.Send(ctx, &pubsub.Message{Body: s3Event("lake/t/_delta_log/00000000000000000001.json")}); err != nil {
			t.Fatal(err)
		}
		return lastSeen() == 1
	})
	for _, body := range [][]byte{s3Event("lake/other/_delta_log/00000000000000000001.json"), s3Event("lake/t/" + add.Path), []byte("{}")} {
		if err := topic.Send(ctx, &pubsub.Message{Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the other messages counted", func() bool {
		st := d.Events().Stats()
		return st.Outside == 1 && st.Malformed == 1 && st.Ignored == 1
	})

	h := d.Handler(true)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/status", nil))
	var page httpapi.StatusPage
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
		t.Fatal(err)
	}
	if page.PollInterval != "10m0s" || page.Events == nil || page.Events.Outside != 1 || page.Events.URL != topicURL || page.Events.ReconcileInterval != "10m0s" {
		t.Fatalf("/status: poll interval %q, events %+v", page.PollInterval, page.Events)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/metrics", nil))
	metrics, _ := io.ReadAll(rec.Body)
	for _, want := range []string{`compactord_events_total{outcome="outside_tables"} 1`, `compactord_events_total{outcome="malformed"} 1`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
