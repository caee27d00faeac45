package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/fanout"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/faultproxy"
	"github.com/compactord/compactord/internal/testutil/stores"
	"github.com/compactord/compactord/objstore"
)

// fakeS3WithEvents is an in-process S3, reached with fake AWS
// credentials, holding a copy of dv-small under events.
func fakeS3WithEvents(t *testing.T) *stores.FakeS3 {
	t.Helper()
	stores.FakeS3Credentials(t)
	s3 := stores.NewFakeS3(t, stores.FakeS3Options{})
	stores.CopyTable(t, testutil.DeltaTable(t, "dv-small"), stores.Open(t, s3.URL("events")))
	return s3
}

// Every command that opens a table gives up on a store that never answers
// (a fault proxy in front of an in-process S3 holds every request) as its
// --store-timeout, --store-attempts and --store-retry-budget say: the flags
// reach the store, and the budget covers the command's calls.
//
// run-unit's first call reads the plan object, and objstore does not retry
// a read whose open timed out (its reader cancels the attempt, and a
// cancellation is not transient), so its store answers 500 instead (which
// the S3 SDK retries too, a few seconds per attempt).
func TestStoreFlagsBoundTheRetriesOfEveryTableCommand(t *testing.T) {
	t.Setenv(fanout.IndexEnv, "0") // run-unit's unit
	s3 := fakeS3WithEvents(t)
	proxy := faultproxy.New(t, s3.Endpoint, faultproxy.Options{})
	url := stores.S3URL(proxy.URL, stores.Bucket, "events")
	ctx := context.Background()
	var stdout, stderr bytes.Buffer
	// Without faults the table reads through the proxy: what fails below
	// is the store, not the URL.
	if code := mainExit(ctx, []string{"inspect", url}, &stdout, &stderr); code != 0 {
		t.Fatalf("inspect through the proxy without faults: exit %d: %s", code, stderr.String())
	}
	// Each attempt ends at its --store-timeout (the SDK does not retry a
	// call whose context ended), so only objstore's retries count.
	hang := faultproxy.Options{Rate: 1, Kinds: []faultproxy.Kind{faultproxy.Delay}, Delay: time.Hour}
	fail := faultproxy.Options{Rate: 1, Kinds: []faultproxy.Kind{faultproxy.InternalError}}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(planFile, []byte(`{"table": "`+url+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// Each row's flags (the store's deadline for a hanging store) go
	// before each limit's.
	hangs := []string{"--store-timeout", "200ms"}
	commands := []struct {
		name  string
		args  []string
		fault faultproxy.Options
		says  string
	}{
		{"inspect", []string{url}, hang, ""},
		{"cat", []string{url}, hang, ""},
		{"plan", []string{url}, hang, ""},
		{"run-plan", []string{planFile}, hang, ""},
		{"run-unit", []string{"--plan", stores.S3URL(proxy.URL, stores.Bucket, "events/_compactord/plans/p/plan.json")}, fail, "InternalError"},
		{"compact", []string{url}, hang, ""},
		{"expire", []string{url, "--column", "value", "--before", "2020-01-01"}, hang, ""},
		{"vacuum", []string{url, "--dry-run"}, hang, ""},
		{"checkpoint", []string{url}, hang, ""},
		{"cleanup-log", []string{url, "--dry-run"}, hang, ""},
		{"backfill-stats", []string{url, "--dry-run"}, hang, ""},
	}
	limits := []struct {
		flags []string
		want  string
	}{
		{[]string{"--store-attempts", "2"}, "gave up after 2 attempts: "},
		{[]string{"--store-attempts", "5", "--store-retry-budget", "0"}, objstore.ErrBudgetExhausted.Error() + " after 1 attempt(s): "},
	}
	for _, c := range commands {
		for _, l := range limits {
			t.Run(c.name+" "+strings.Join(l.flags, " "), func(t *testing.T) {
				proxy.SetOptions(c.fault)
				stdout.Reset()
				stderr.Reset()
				args, says := append([]string{c.name}, c.args...), c.says
				if says == "" {
					// A hanging store: each attempt ends at its deadline.
					args, says = append(args, hangs...), "no answer within 200ms"
				}
				args = append(args, l.flags...)
				code := mainExit(ctx, args, &stdout, &stderr)
				if code == 0 || code == 2 {
					t.Fatalf("exit %d, want a failed run (not 0, not a usage error); stderr:\n%s", code, stderr.String())
				}
				for _, want := range []string{l.want, says} {
					if !strings.Contains(stderr.String(), want) {
						t.Fatalf("stderr does not say %q:\n%s", want, stderr.String())
					}
				}
			})
		}
	}
}

// commitObject is the path of a commit file N.json in an S3 request.
var commitObject = regexp.MustCompile(`/_delta_log/[0-9]{20}\.json$`)

// A command's tables log the DynamoDB log store's warnings on stderr: a
// backfill-stats commit whose copy to N.json fails (every PUT of a commit
// file answers 500) is decided all the same, and the warning that the next
// reader publishes it reaches stderr, not stdout. Needs the S3 and DynamoDB
// emulators (scripts/emulators/run.sh).
func TestACommandLogsTheDynamoDBLogStoresWarningsOnStderr(t *testing.T) {
	direct := stores.S3DynamoTable(t)
	stores.CopyTable(t, testutil.DeltaTable(t, "stats-optional"), stores.Open(t, direct))
	u, err := neturl.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	proxy := faultproxy.New(t, q.Get("endpoint"), faultproxy.Options{Rate: 1, Kinds: []faultproxy.Kind{faultproxy.InternalError},
		Match: func(r *http.Request) bool { return r.Method == http.MethodPut && commitObject.MatchString(r.URL.Path) }})
	q.Set("endpoint", proxy.URL)
	u.RawQuery = q.Encode()

	var stdout, stderr bytes.Buffer
	if code := mainExit(context.Background(), []string{"backfill-stats", u.String(), "--store-attempts", "1"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	const warning = "copying the committed temp file failed; the next reader or writer repairs it"
	if !strings.Contains(stderr.String(), warning) {
		t.Fatalf("stderr does not carry the log store's warning %q:\n%s", warning, stderr.String())
	}
	if strings.Contains(stdout.String(), warning) || !strings.Contains(stdout.String(), "committed COMPUTE STATS at version 3") {
		t.Fatalf("stdout is not the report alone:\n%s", stdout.String())
	}
	if _, faults := proxy.Stats(); faults[faultproxy.InternalError] == 0 {
		t.Fatal("no commit PUT was failed: the test proves nothing")
	}
	snap, err := delta.LoadSnapshot(context.Background(), stores.Open(t, direct), -1)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version != 3 {
		t.Fatalf("the next reader sees v%d, want the decided v3", snap.Version)
	}
}

func TestAPollOfAStoreThatNeverAnswersIsAPollErrorAndSIGTERMStillStops(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", testutil.SilentEndpoint(t))
	dir := t.TempDir()
	writePolicy(t, dir, "events.hcl", "table \"events\" {\n  url = \"gs://lake/events\"\n}\n")
	sf := &storeFlags{budget: 10, opts: objstore.Options{
		MetadataTimeout: 300 * time.Millisecond, MaxAttempts: 2, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond,
	}}
	log := hclog.NewNullLogger()
	d, base, cancel, done := serveDeltaDaemon(t, dir, log, sf)
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("daemon did not stop within 30s of SIGTERM")
		}
	}()

	waitFor(t, "the poll to fail", func() bool {
		st := d.Scheduler().Status()
		return len(st) == 1 && st[0].PollError != ""
	})
	st := d.Scheduler().Status()[0]
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

// A worker started with workerArgs has the coordinator's store settings:
// the rendered flags parse back, on run-unit's own flag set, to the same
// values; a flag left at its default (or set to it) is not rendered.
func TestStoreFlagsRenderAsTheWorkerArgsThatReproduceThem(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
		want []string
	}{
		{name: "defaults", want: nil},
		{name: "a default said again", set: []string{"--store-attempts", "5", "--store-timeout", "30s"}, want: nil},
		{name: "every flag", set: []string{"--store-timeout", "2m", "--store-read-idle-timeout", "1.5s", "--store-write-timeout", "1h30m",
			"--store-attempts", "9", "--store-retry-budget", "0"},
			want: []string{"--store-attempts=9", "--store-read-idle-timeout=1.5s", "--store-retry-budget=0", "--store-timeout=2m0s", "--store-write-timeout=1h30m0s"}},
		{name: "one flag", set: []string{"--store-write-timeout", "1d"}, want: []string{"--store-write-timeout=24h0m0s"}},
		{name: "allowed prefixes, in order", set: []string{"--allow-external-prefix", "s3://b/x", "--allow-external-prefix=file:///srv/dv"},
			want: []string{"--allow-external-prefix=s3://b/x", "--allow-external-prefix=file:///srv/dv"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newCommandFlags(context.Background(), "compact", "warn", io.Discard)
			sf := fs.addStoreFlags(io.Discard)
			if _, err := fs.parse(tc.set); err != nil {
				t.Fatal(err)
			}
			got := sf.workerArgs()
			if !slices.Equal(got, tc.want) {
				t.Fatalf("worker args %q, want %q", got, tc.want)
			}
			wfs := newCommandFlags(context.Background(), "run-unit", "warn", io.Discard)
			worker := wfs.addStoreFlags(io.Discard)
			if _, err := wfs.parse(got); err != nil {
				t.Fatalf("run-unit refuses %q: %v", got, err)
			}
			if worker.opts != sf.opts || worker.budget != sf.budget || !slices.Equal(worker.allowDV, sf.allowDV) {
				t.Fatalf("the worker has %+v budget %d, the coordinator %+v budget %d", worker.opts, worker.budget, sf.opts, sf.budget)
			}
		})
	}
	if args := (*storeFlags)(nil).workerArgs(); args != nil {
		t.Fatalf("no store flags render as %q", args)
	}
}

// A negative --store-* value is a usage error (exit 2) naming the flag, on
// every kind of command that takes them, before any table is opened.
func TestNegativeStoreFlagsAreUsageErrors(t *testing.T) {
	url := "file://" + filepath.ToSlash(t.TempDir())
	for _, cmd := range [][]string{{"inspect", url}, {"compact", url}, {"vacuum", url, "--dry-run"}, {"run", "--policies", t.TempDir()}} {
		for _, flag := range []string{"--store-timeout=-1s", "--store-read-idle-timeout=-5m", "--store-write-timeout=-1ms", "--store-attempts=-1", "--store-retry-budget=-2"} {
			var stdout, stderr bytes.Buffer
			args := append(slices.Clone(cmd), flag)
			// A daemon that took the flag would run until the deadline.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			code := mainExit(ctx, args, &stdout, &stderr)
			cancel()
			if code != 2 {
				t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, stderr.String())
			}
			name, _, _ := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
			if last := lastLine(stderr.String()); !strings.Contains(last, name) || !strings.Contains(last, "negative") {
				t.Errorf("%v: error %q does not say %s is negative", args, last, name)
			}
		}
	}
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// compact, expire and plan open and read their table under the run's store
// deadlines and retry budget: against a store that never answers, each
// fails naming the listing it gave up on, not the end of its caller's
// context (the backstop below, far above 2 attempts of 300ms).
func TestOneShotCommandsGiveUpOnAStoreThatNeverAnswers(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", testutil.SilentEndpoint(t))
	store := []string{"--store-timeout", "300ms", "--store-attempts", "2", "--store-retry-budget", "2"}
	for _, args := range [][]string{
		{"compact", "gs://lake/t"},
		{"expire", "gs://lake/t", "--column", "d", "--before", "2020-01-01"},
		{"plan", "gs://lake/t"},
	} {
		t.Run(args[0], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			var stdout, stderr bytes.Buffer
			code := mainExit(ctx, append(args, store...), &stdout, &stderr)
			if code == 0 {
				t.Fatalf("exit 0 against a silent store:\n%s", stdout.String())
			}
			if ctx.Err() != nil {
				t.Fatalf("the command ran until its caller's context ended: %s", stderr.String())
			}
			msg := stderr.String()
			if !strings.Contains(msg, "list t/_delta_log/") || !strings.Contains(msg, "no answer within 300ms") {
				t.Fatalf("stderr does not name the listing and the store deadline:\n%s", msg)
			}
		})
	}
}
