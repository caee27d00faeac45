package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/compactord/compactord/checkpoint"
	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/internal/attemptsweep"
	"github.com/compactord/compactord/internal/daemon"
	"github.com/compactord/compactord/internal/httpapi"
	"github.com/compactord/compactord/internal/logging"
	"github.com/compactord/compactord/internal/progress"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/logcleanup"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/retention"
	"github.com/compactord/compactord/scheduler"
	"github.com/compactord/compactord/statsbackfill"
	"github.com/compactord/compactord/vacuum"
)

// stillClock never moves: timers of zero wait fire at once, others never,
// so only the first poll and explicit triggers happen and durations are 0.
type stillClock struct{ now time.Time }

type stillTimer struct{ c chan time.Time }

func (t stillTimer) C() <-chan time.Time { return t.c }
func (t stillTimer) Stop() bool          { return true }

func (c stillClock) Now() time.Time { return c.now }
func (c stillClock) NewTimer(d time.Duration) scheduler.Timer {
	t := stillTimer{c: make(chan time.Time, 1)}
	if d <= 0 {
		t.c <- c.now
	}
	return t
}

// fakeBackend counts runs per table and returns a fixed report.
type fakeBackend struct {
	mu   sync.Mutex
	runs map[string]int
}

func (f *fakeBackend) backend() backend {
	return backend{
		Run: func(ctx context.Context, req scheduler.RunRequest[policies.Policy]) (scheduler.RunReport, error) {
			f.mu.Lock()
			f.runs[req.Table]++
			f.mu.Unlock()
			return scheduler.RunReport{
				Committed: true, Version: 4, ReadVersion: 3,
				FilesRemoved: 7, BytesRemoved: 7000, FilesAdded: 1, BytesAdded: 6500,
				Conflicts: map[string]int{"delete_dv": 1},
				Counts: map[string]int64{compaction.CountJobsPlanned: 2, compaction.CountJobsCommitted: 2,
					compaction.CountReconciliations: 2, compaction.CountReconciledRows: 30, retention.CountRowsExpired: 12,
					vacuum.CountFilesDeleted: 5, vacuum.CountBytesDeleted: 5000, vacuum.CountOrphans: 2,
					statsbackfill.CountFilesBackfilled: 3, attemptsweep.CountAttempts: 1, attemptsweep.CountObjects: 4,
					checkpoint.CountWritten: 3, checkpoint.CountFailed: 1, checkpoint.CountDurationMillis: 1500,
					logcleanup.CountFilesDeleted: 21},
			}, nil
		},
		Poll: func(ctx context.Context, p policies.Policy, lastSeen int64) (scheduler.PollResult, error) {
			if lastSeen >= 3 {
				return scheduler.PollResult{Version: 3}, nil
			}
			return scheduler.PollResult{Version: 3, Changed: true, Backlog: &scheduler.Backlog{
				SmallFiles: 9, SmallBytes: 9000, MergeableFiles: 7, MergeableBytes: 7000, Files: 9, Bytes: 100000, DeletedRowsRatio: 0.01}}, nil
		},
		Plan: func(ctx context.Context, p policies.Policy, exclude map[string]bool) (any, error) {
			return map[string]any{"table": p.Name, "jobs": []string{"job-0"}}, nil
		},
	}
}

func (f *fakeBackend) count(table string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runs[table]
}

func writePolicy(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, 5*time.Millisecond, what, cond)
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	return testutil.Get(t, url)
}

func post(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Post(url, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

type testDaemon struct {
	base   string
	sigs   chan os.Signal
	cancel context.CancelFunc
	done   chan error
	d      *daemon.Daemon
	fb     *fakeBackend
}

// memTableDaemon writes the policy of one table, name at mem://name, into
// a new policy directory and returns the directory and a fake backend
// whose functions a test overrides before it starts the daemon.
func memTableDaemon(t *testing.T, name string) (string, *fakeBackend, backend) {
	t.Helper()
	dir := t.TempDir()
	writePolicy(t, dir, name+".hcl", fmt.Sprintf("table %q {\n  url = \"mem://%s\"\n}\n", name, name))
	fb := &fakeBackend{runs: map[string]int{}}
	return dir, fb, fb.backend()
}

func startTestDaemon(t *testing.T, dir string) *testDaemon {
	t.Helper()
	fb := &fakeBackend{runs: map[string]int{}}
	return startTestDaemonWith(t, dir, fb, fb.backend())
}

// startTestDaemonWith starts a daemon on dir over be (fb only counts runs
// when be comes from fb.backend()).
func startTestDaemonWith(t *testing.T, dir string, fb *fakeBackend, be backend) *testDaemon {
	t.Helper()
	return startTestDaemonOpts(t, daemonOptions{PolicyDir: dir}, "127.0.0.1:0", fb, be)
}

// startTestDaemonLogged is startTestDaemonWith logging to log.
func startTestDaemonLogged(t *testing.T, dir string, fb *fakeBackend, be backend, log hclog.Logger) *testDaemon {
	t.Helper()
	return startTestDaemonOptsLogged(t, daemonOptions{PolicyDir: dir}, "127.0.0.1:0", fb, be, log)
}

// startTestDaemonOpts starts a daemon with o (its clock still) listening on
// addr; base always dials loopback.
func startTestDaemonOpts(t *testing.T, o daemonOptions, addr string, fb *fakeBackend, be backend) *testDaemon {
	t.Helper()
	return startTestDaemonOptsLogged(t, o, addr, fb, be, hclog.NewNullLogger())
}

// startTestDaemonOptsLogged is startTestDaemonOpts logging to log.
func startTestDaemonOptsLogged(t *testing.T, o daemonOptions, addr string, fb *fakeBackend, be backend, log hclog.Logger) *testDaemon {
	t.Helper()
	o.Clock = stillClock{now: time.Unix(1_700_000_000, 0)}
	return startTestDaemonLog(t, o, addr, log, fb, be)
}

// startTestDaemonLog starts a daemon with o (nil clock: the wall clock)
// and logger log, listening on addr.
func startTestDaemonLog(t *testing.T, o daemonOptions, addr string, log hclog.Logger, fb *fakeBackend, be backend) *testDaemon {
	t.Helper()
	d, err := newDaemon(o, log, func(policies.Daemon) backend { return be })
	if err != nil {
		t.Fatal(err)
	}
	td := serveTestDaemon(t, d, addr)
	td.fb = fb
	t.Cleanup(func() {
		td.cancel()
		<-td.done
	})
	want := len(d.Tables())
	waitFor(t, "first polls", func() bool {
		sts := d.Scheduler().Status()
		if len(sts) != want { // serve registers the tables after it starts listening
			return false
		}
		for _, st := range sts {
			if st.Backlog == nil {
				return false
			}
		}
		return true
	})
	return td
}

// serveTestDaemon serves d on a listener at addr until td.cancel; td.done
// then receives Serve's result. td.base always dials loopback.
func serveTestDaemon(t *testing.T, d *daemon.Daemon, addr string) *testDaemon {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	td := &testDaemon{base: "http://127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), sigs: make(chan os.Signal, 1), cancel: cancel, done: make(chan error, 1), d: d}
	go func() { td.done <- d.Serve(ctx, td.sigs, ln) }()
	return td
}

// serveDeltaDaemon serves the policies in dir with the daemon's own
// backend (store settings sf; nil: the defaults) and a still clock on a
// loopback port. cancel stops it; done then receives Serve's result.
func serveDeltaDaemon(t *testing.T, dir string, log hclog.Logger, sf *storeFlags) (d *daemon.Daemon, base string, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	d, err := newDaemon(daemonOptions{PolicyDir: dir, Clock: stillClock{now: time.Unix(1_700_000_000, 0)}}, log,
		func(dc policies.Daemon) backend { return newDeltaBackend(log, dc, sf) })
	if err != nil {
		t.Fatal(err)
	}
	td := serveTestDaemon(t, d, "127.0.0.1:0")
	return d, td.base, td.cancel, td.done
}

func TestMetricsExpositionAfterAKnownRun(t *testing.T) {
	dir := t.TempDir()
	writePolicy(t, dir, "a.hcl", "table \"a\" {\n  url = \"mem://a\"\n  triggers {\n    max_time_since_last_run = \"48h\"\n  }\n}\n")
	td := startTestDaemon(t, dir)
	if code := post(t, td.base+"/tables/a/run"); code != http.StatusAccepted {
		t.Fatalf("POST run: %d", code)
	}
	waitFor(t, "run of a", func() bool { st := td.d.Scheduler().Status(); return st[0].LastRun != nil })
	code, body := get(t, td.base+"/metrics")
	if code != 200 {
		t.Fatalf("GET /metrics: %d", code)
	}
	want := `# HELP compactord_build_info Build information; always 1.
# TYPE compactord_build_info gauge
compactord_build_info{version="` + version + `"} 1
# HELP compactord_tables Tables with a loaded policy.
# TYPE compactord_tables gauge
compactord_tables 1
# HELP compactord_queue_length Runs due and waiting for a worker (the fleet queue).
# TYPE compactord_queue_length gauge
compactord_queue_length 0
# HELP compactord_policy_reloads_total Policy reloads by result.
# TYPE compactord_policy_reloads_total counter
compactord_policy_reloads_total{result="success"} 0
compactord_policy_reloads_total{result="failure"} 0
# HELP compactord_events_total Change notifications received (received), the polls they asked for (polled), the objects they named outside every watched table (outside_tables, dropped) or inside one but no new commit (ignored, with the stores' test messages), messages in no known format (malformed), failed polls (poll_error, delivered again) and subscription failures (subscription_error); all 0 without an events block.
# TYPE compactord_events_total counter
compactord_events_total{outcome="received"} 0
compactord_events_total{outcome="polled"} 0
compactord_events_total{outcome="outside_tables"} 0
compactord_events_total{outcome="ignored"} 0
compactord_events_total{outcome="malformed"} 0
compactord_events_total{outcome="poll_error"} 0
compactord_events_total{outcome="subscription_error"} 0
# HELP compactord_runs_total Compaction runs by result.
# TYPE compactord_runs_total counter
compactord_runs_total{table="a",result="committed"} 1
compactord_runs_total{table="a",result="partial"} 0
compactord_runs_total{table="a",result="done"} 0
compactord_runs_total{table="a",result="noop"} 0
compactord_runs_total{table="a",result="skipped"} 0
compactord_runs_total{table="a",result="retry"} 0
compactord_runs_total{table="a",result="quarantine"} 0
compactord_runs_total{table="a",result="halt"} 0
compactord_runs_total{table="a",result="cancelled"} 0
# HELP compactord_rewritten_files_total Data files removed by committed compactions.
# TYPE compactord_rewritten_files_total counter
compactord_rewritten_files_total{table="a"} 7
# HELP compactord_rewritten_bytes_total Bytes of data files removed by committed compactions.
# TYPE compactord_rewritten_bytes_total counter
compactord_rewritten_bytes_total{table="a"} 7000
# HELP compactord_written_files_total Data files added by committed compactions.
# TYPE compactord_written_files_total counter
compactord_written_files_total{table="a"} 1
# HELP compactord_written_bytes_total Bytes of data files added by committed compactions.
# TYPE compactord_written_bytes_total counter
compactord_written_bytes_total{table="a"} 6500
# HELP compactord_commit_conflicts_total Concurrent commits met while committing, by kind.
# TYPE compactord_commit_conflicts_total counter
compactord_commit_conflicts_total{table="a",kind="delete_dv"} 1
# HELP compactord_reconciliations_total Concurrent deletion vectors remapped onto compaction outputs.
# TYPE compactord_reconciliations_total counter
compactord_reconciliations_total{table="a"} 2
# HELP compactord_reconciled_rows_total Concurrently deleted rows carried onto compaction outputs.
# TYPE compactord_reconciled_rows_total counter
compactord_reconciled_rows_total{table="a"} 30
# HELP compactord_expired_rows_total Rows removed by retention deletes.
# TYPE compactord_expired_rows_total counter
compactord_expired_rows_total{table="a"} 12
# HELP compactord_checkpoints_written_total Checkpoints the daemon wrote (after its own commits on multiples of delta.checkpointInterval, and catch-ups).
# TYPE compactord_checkpoints_written_total counter
compactord_checkpoints_written_total{table="a"} 3
# HELP compactord_checkpoints_failed_total Checkpoints that failed (the commits stand; the next run retries).
# TYPE compactord_checkpoints_failed_total counter
compactord_checkpoints_failed_total{table="a"} 1
# HELP compactord_checkpoint_duration_seconds_total Time spent writing checkpoints.
# TYPE compactord_checkpoint_duration_seconds_total counter
compactord_checkpoint_duration_seconds_total{table="a"} 1.5
# HELP compactord_log_files_deleted_total Expired log files (commits, checkpoints, checksums, compaction files, sidecars) deleted by log cleanup.
# TYPE compactord_log_files_deleted_total counter
compactord_log_files_deleted_total{table="a"} 21
# HELP compactord_vacuum_deleted_files_total Files (and empty directories) deleted by vacuums and temp sweeps.
# TYPE compactord_vacuum_deleted_files_total counter
compactord_vacuum_deleted_files_total{table="a"} 5
# HELP compactord_vacuum_deleted_bytes_total Bytes of files deleted by vacuums and temp sweeps.
# TYPE compactord_vacuum_deleted_bytes_total counter
compactord_vacuum_deleted_bytes_total{table="a"} 5000
# HELP compactord_vacuum_orphans_total Deleted files that no action of the log named (abandoned writes, temp leftovers).
# TYPE compactord_vacuum_orphans_total counter
compactord_vacuum_orphans_total{table="a"} 2
# HELP compactord_swept_attempts_total Dead attempts of killed runs (their intent records) swept at the start of a compaction or retention run.
# TYPE compactord_swept_attempts_total counter
compactord_swept_attempts_total{table="a"} 1
# HELP compactord_swept_attempt_objects_total Uncommitted objects of dead attempts (and their upload temp files) deleted at the start of a run.
# TYPE compactord_swept_attempt_objects_total counter
compactord_swept_attempt_objects_total{table="a"} 4
# HELP compactord_stats_backfilled_files_total Data files that got statistics from a stats backfill.
# TYPE compactord_stats_backfilled_files_total counter
compactord_stats_backfilled_files_total{table="a"} 3
# HELP compactord_clustering_key_changes_total Clustering keys set by CLUSTER BY AUTO (clustering { columns = "auto" }).
# TYPE compactord_clustering_key_changes_total counter
compactord_clustering_key_changes_total{table="a"} 0
# HELP compactord_clustering_key_refusals_total Clustering keys CLUSTER BY AUTO chose but could not set (the table's protocol or layout refused them).
# TYPE compactord_clustering_key_refusals_total counter
compactord_clustering_key_refusals_total{table="a"} 0
# HELP compactord_dropped_jobs_total Planned jobs left out of a commit (true conflicts, failed rewrites).
# TYPE compactord_dropped_jobs_total counter
compactord_dropped_jobs_total{table="a"} 0
# HELP compactord_polls_total Log polls.
# TYPE compactord_polls_total counter
compactord_polls_total{table="a"} 1
# HELP compactord_poll_errors_total Log polls that failed.
# TYPE compactord_poll_errors_total counter
compactord_poll_errors_total{table="a"} 0
# HELP compactord_coalesced_triggers_total Triggers merged into an already pending run.
# TYPE compactord_coalesced_triggers_total counter
compactord_coalesced_triggers_total{table="a"} 0
# HELP compactord_backlog_small_files Compaction candidates waiting (small files past the settle window).
# TYPE compactord_backlog_small_files gauge
compactord_backlog_small_files{table="a"} 7
# HELP compactord_backlog_small_bytes Bytes of compaction candidates waiting.
# TYPE compactord_backlog_small_bytes gauge
compactord_backlog_small_bytes{table="a"} 7000
# HELP compactord_table_files Live data files.
# TYPE compactord_table_files gauge
compactord_table_files{table="a"} 9
# HELP compactord_table_bytes Bytes of live data files.
# TYPE compactord_table_bytes gauge
compactord_table_bytes{table="a"} 100000
# HELP compactord_table_deleted_rows_ratio Deletion-vector deleted rows over physical rows.
# TYPE compactord_table_deleted_rows_ratio gauge
compactord_table_deleted_rows_ratio{table="a"} 0.01
# HELP compactord_table_version Latest table version seen by the poll.
# TYPE compactord_table_version gauge
compactord_table_version{table="a"} 3
# HELP compactord_table_halted 1 when the table is halted (an invariant would break; operator action needed).
# TYPE compactord_table_halted gauge
compactord_table_halted{table="a"} 0
# HELP compactord_table_state 1 for the table's current state (idle, queued, running, backoff, waiting, halted, disabled).
# TYPE compactord_table_state gauge
compactord_table_state{table="a",state="idle"} 1
compactord_table_state{table="a",state="queued"} 0
compactord_table_state{table="a",state="running"} 0
compactord_table_state{table="a",state="backoff"} 0
compactord_table_state{table="a",state="waiting"} 0
compactord_table_state{table="a",state="halted"} 0
compactord_table_state{table="a",state="disabled"} 0
# HELP compactord_table_enabled 1 when the table's policy is enabled.
# TYPE compactord_table_enabled gauge
compactord_table_enabled{table="a"} 1
# HELP compactord_quarantined_files Data files quarantined (skipped) after being found corrupt, or missing from the store for several runs.
# TYPE compactord_quarantined_files gauge
compactord_quarantined_files{table="a"} 0
# HELP compactord_consecutive_failures Failed runs since the last success.
# TYPE compactord_consecutive_failures gauge
compactord_consecutive_failures{table="a"} 0
# HELP compactord_table_queue_score Priority of the table's run waiting for a worker (benefit per cost raised by its wait); 0 while none waits.
# TYPE compactord_table_queue_score gauge
compactord_table_queue_score{table="a"} 0
# HELP compactord_table_quota_occupation Worker time the table used in the last hour over its quota; above 1 it waits while tables under quota wait.
# TYPE compactord_table_quota_occupation gauge
compactord_table_quota_occupation{table="a"} 0
# HELP compactord_last_success_timestamp_seconds End of the table's last successful run (Unix time); absent until one.
# TYPE compactord_last_success_timestamp_seconds gauge
compactord_last_success_timestamp_seconds{table="a"} 1.7e+09
# HELP compactord_expected_run_interval_seconds The policy's triggers.max_time_since_last_run: a run is due at least this often while small files wait; absent when unset.
# TYPE compactord_expected_run_interval_seconds gauge
compactord_expected_run_interval_seconds{table="a"} 172800
# HELP compactord_run_duration_seconds Duration of compaction runs.
# TYPE compactord_run_duration_seconds histogram
compactord_run_duration_seconds_bucket{table="a",le="0.1"} 1
compactord_run_duration_seconds_bucket{table="a",le="0.5"} 1
compactord_run_duration_seconds_bucket{table="a",le="1"} 1
compactord_run_duration_seconds_bucket{table="a",le="5"} 1
compactord_run_duration_seconds_bucket{table="a",le="15"} 1
compactord_run_duration_seconds_bucket{table="a",le="60"} 1
compactord_run_duration_seconds_bucket{table="a",le="300"} 1
compactord_run_duration_seconds_bucket{table="a",le="900"} 1
compactord_run_duration_seconds_bucket{table="a",le="3600"} 1
compactord_run_duration_seconds_bucket{table="a",le="+Inf"} 1
compactord_run_duration_seconds_sum{table="a"} 0
compactord_run_duration_seconds_count{table="a"} 1
`
	// The text format does not order families or labels; client_golang
	// sorts both, so the families are compared parsed and re-encoded.
	gotFams := parseExposition(t, body)
	for _, runtime := range []string{"process_resident_memory_bytes", "process_cpu_seconds_total", "process_open_fds", "go_goroutines", "go_memstats_heap_alloc_bytes"} {
		if _, ok := gotFams[runtime]; !ok {
			t.Errorf("/metrics lacks %s", runtime)
		}
	}
	for name := range gotFams {
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
			delete(gotFams, name)
		}
	}
	// exportedMetricNames (the monitoring kit's check) is what is served.
	var served []string
	for name := range gotFams {
		served = append(served, name)
	}
	sort.Strings(served)
	if !slices.Equal(served, httpapi.MetricNames()) {
		t.Errorf("served families %v, exportedMetricNames %v", served, httpapi.MetricNames())
	}
	if got, want := canonicalExposition(t, gotFams), canonicalExposition(t, parseExposition(t, want)); got != want {
		t.Fatalf("metrics differ.\n got:\n%s\nwant:\n%s", got, want)
	}
	if ct := contentType(t, td.base+"/metrics"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("Content-Type %q", ct)
	}
}

func contentType(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.Header.Get("Content-Type")
}

// parseExposition parses Prometheus text exposition into its families.
func parseExposition(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse exposition: %v\n%s", err, text)
	}
	return fams
}

// canonicalExposition re-encodes families sorted by name, each metric's
// labels sorted by name and the metrics of a family sorted by their text.
func canonicalExposition(t *testing.T, fams map[string]*dto.MetricFamily) string {
	t.Helper()
	var out strings.Builder
	for _, n := range slices.Sorted(maps.Keys(fams)) {
		f := fams[n]
		for _, m := range f.Metric {
			sort.Slice(m.Label, func(i, j int) bool { return m.Label[i].GetName() < m.Label[j].GetName() })
		}
		var lines []string
		for _, m := range f.Metric {
			var b strings.Builder
			one := &dto.MetricFamily{Name: f.Name, Type: f.Type, Metric: []*dto.Metric{m}}
			if _, err := expfmt.MetricFamilyToText(&b, one); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, b.String()[strings.Index(b.String(), "\n")+1:])
		}
		sort.Strings(lines)
		out.WriteString("# HELP " + n + " " + f.GetHelp() + "\n# TYPE " + n + " " + strings.ToLower(f.GetType().String()) + "\n")
		out.WriteString(strings.Join(lines, ""))
	}
	return out.String()
}

func TestSignalsReloadAndRunAndTheHTTPPagesFollow(t *testing.T) {
	dir := t.TempDir()
	writePolicy(t, dir, "a.hcl", "table \"a\" {\n  url = \"mem://a\"\n}\n")
	writePolicy(t, dir, "b.hcl", "table \"b\" {\n  url = \"mem://b\"\n}\n")
	td := startTestDaemon(t, dir)

	if code, body := get(t, td.base+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("healthz %d %q", code, body)
	}
	if code, _ := get(t, td.base+"/readyz"); code != 200 {
		t.Fatalf("readyz %d", code)
	}

	// SIGUSR1 runs every enabled table at once.
	td.sigs <- syscall.SIGUSR1
	waitFor(t, "both tables ran", func() bool { return td.fb.count("a") == 1 && td.fb.count("b") == 1 })

	// SIGHUP: b removed, c added, a changed.
	if err := os.Remove(filepath.Join(dir, "b.hcl")); err != nil {
		t.Fatal(err)
	}
	writePolicy(t, dir, "c.hcl", "table \"c\" {\n  url = \"mem://c\"\n}\n")
	writePolicy(t, dir, "a.hcl", "table \"a\" {\n  url = \"mem://a\"\n  strategy = \"binpack\"\n}\n")
	td.sigs <- syscall.SIGHUP
	waitFor(t, "reload", func() bool {
		st := td.d.Scheduler().Status()
		return len(st) == 2 && st[0].Name == "a" && st[0].Strategy == "binpack" && st[1].Name == "c" && st[1].Backlog != nil
	})
	_, metrics := get(t, td.base+"/metrics")
	if strings.Contains(metrics, `table="b"`) {
		t.Fatalf("series of removed table b remain:\n%s", metrics)
	}
	for _, want := range []string{`compactord_policy_reloads_total{result="success"} 1`, `compactord_tables 2`, `compactord_table_halted{table="c"} 0`} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("metrics lack %q:\n%s", want, metrics)
		}
	}

	// A bad reload keeps the running policies and is reported.
	writePolicy(t, dir, "c.hcl", "table \"c\" {\n  url = \"mem://c\"\n  strategy = \"fast\"\n}\n")
	td.sigs <- syscall.SIGHUP
	waitFor(t, "failed reload", func() bool {
		_, m := get(t, td.base+"/metrics")
		return strings.Contains(m, `compactord_policy_reloads_total{result="failure"} 1`)
	})
	code, body := get(t, td.base+"/status")
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	var page httpapi.StatusPage
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Tables) != 2 || !strings.Contains(page.ReloadError, "c.hcl:3:3") || page.Tables[1].State != scheduler.StateIdle {
		t.Fatalf("status page = %s", body)
	}

	// Plan preview and on-demand run.
	code, body = get(t, td.base+"/tables/c/plan")
	if code != 200 || !strings.Contains(body, `"table": "c"`) {
		t.Fatalf("plan: %d %s", code, body)
	}
	if code, _ := get(t, td.base+"/tables/zzz/plan"); code != 404 {
		t.Fatalf("plan of unknown table: %d", code)
	}
	if code := post(t, td.base+"/tables/zzz/run"); code != 404 {
		t.Fatalf("run of unknown table: %d", code)
	}
	if code := post(t, td.base+"/tables/c/run"); code != 202 {
		t.Fatalf("run of c: %d", code)
	}
	waitFor(t, "c ran", func() bool { return td.fb.count("c") == 1 })

	// SIGTERM (ctx) stops serving and returns nil.
	td.cancel()
	select {
	case err := <-td.done:
		if err != nil {
			t.Fatal(err)
		}
		td.done <- nil // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("daemon did not stop")
	}
}

func TestCheckPrintsEffectivePoliciesAndReportsErrors(t *testing.T) {
	dir := t.TempDir()
	writePolicy(t, dir, "events.hcl", `table "events" {
  url      = "file:///data/events"
  schedule = "@every 1m"
  strategy = "auto"
}
`)
	var out, errb strings.Builder
	if code := mainExit(context.Background(), []string{"check", dir}, &out, &errb); code != 0 {
		t.Fatalf("check exit %d: %s", code, errb.String())
	}
	for _, want := range []string{`table "events" {`, `url                    = "file:///data/events"`, `settle_window          = "15m"`, `small_files             = 50`} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("check output lacks %q:\n%s", want, out.String())
		}
	}
	writePolicy(t, dir, "bad.hcl", "table \"bad\" {\n  url = \"mem://x\"\n  triggers {\n    small_filez = 1\n  }\n}\n")
	out.Reset()
	errb.Reset()
	if code := mainExit(context.Background(), []string{"check", dir}, &out, &errb); code != 1 {
		t.Fatalf("check of a bad dir exit %d", code)
	}
	if !strings.Contains(errb.String(), filepath.Join(dir, "bad.hcl")+`:4:5: Unsupported argument; An argument named "small_filez"`) {
		t.Fatalf("stderr = %s", errb.String())
	}
	if code := mainExit(context.Background(), []string{"check"}, &out, &errb); code != 2 {
		t.Fatalf("check without dir exit %d", code)
	}
}

func TestStatusShowsTheRunningOperationsProgressAndTheLogRepeatsIt(t *testing.T) {
	dir, fb, be := memTableDaemon(t, "a")
	started := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	release := make(chan struct{})
	be.Run = func(ctx context.Context, req scheduler.RunRequest[policies.Policy]) (scheduler.RunReport, error) {
		req.Progress(progress.Progress{Op: "compaction", Phase: "rewrite", Files: 4, FilesTotal: 22, Bytes: 4 << 20, BytesTotal: 22 << 20, Started: started})
		<-release
		return scheduler.RunReport{}, nil
	}
	var logs testutil.SyncBuffer
	td := startTestDaemonLog(t, daemonOptions{PolicyDir: dir, ProgressInterval: 20 * time.Millisecond}, "127.0.0.1:0", logging.New(&logs, "json", "info"), fb, be)
	t.Cleanup(func() { close(release) }) // before the daemon's cleanup stops it
	base := td.base
	if code := post(t, base+"/tables/a/run"); code != http.StatusAccepted {
		t.Fatalf("POST run: %d", code)
	}
	var page struct {
		Tables []map[string]any `json:"tables"`
	}
	waitFor(t, "progress in /status", func() bool {
		_, body := get(t, base+"/status")
		if err := json.Unmarshal([]byte(body), &page); err != nil {
			t.Fatal(err)
		}
		return len(page.Tables) == 1 && page.Tables[0]["progress"] != nil
	})
	p := page.Tables[0]["progress"].(map[string]any)
	for k, want := range map[string]any{"op": "compaction", "phase": "rewrite", "files": 4.0, "files_total": 22.0,
		"bytes": float64(4 << 20), "bytes_total": float64(22 << 20), "started_at": "2026-03-01T12:00:00Z"} {
		if p[k] != want {
			t.Errorf("progress %s = %#v, want %#v", k, p[k], want)
		}
	}
	waitFor(t, "a progress log line", func() bool { return strings.Contains(logs.String(), `"@message":"run progress"`) })
	for _, line := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(line, `"run progress"`) {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		if m["files"] != 4.0 || m["files_total"] != 22.0 || m["table"] != "a" {
			t.Errorf("progress line %v", m)
		}
		if _, ok := m["elapsed"].(string); !ok {
			t.Errorf("elapsed %#v is not a duration string", m["elapsed"])
		}
		break
	}
}
