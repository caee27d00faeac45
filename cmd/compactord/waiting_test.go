package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/runner"
	"github.com/compactord/compactord/scheduler"
)

// startRealDaemon starts a daemon over the real Delta backend on the
// policy directory dir, with the wall clock and polls every poll, its JSON
// log collected; restart it by calling it again after ld.stop.
func startRealDaemon(t *testing.T, dir string, poll time.Duration) *loggedDaemon {
	t.Helper()
	logs, log := jsonLog(t)
	be := newDeltaBackend(log, policies.Daemon{}, nil)
	d, err := newDaemon(daemonOptions{PolicyDir: dir, Poll: poll}, log, func(policies.Daemon) backend { return be })
	if err != nil {
		t.Fatal(err)
	}
	td := serveTestDaemon(t, d, "127.0.0.1:0")
	t.Cleanup(func() {
		td.cancel()
		<-td.done
	})
	// Unlike startTestDaemon, no first backlog is awaited: the tables here
	// wait or halt.
	want := len(d.Tables())
	waitFor(t, "the tables registered", func() bool { return len(d.Scheduler().Status()) == want })
	return &loggedDaemon{testDaemon: td, logs: logs}
}

// fastBackoff is a daemon block whose retries come quickly.
const fastBackoff = "daemon {\n  backoff_base = \"100ms\"\n  backoff_max = \"500ms\"\n}\n"

// A policy for a table that does not exist yet: the daemon does not halt
// it but waits, saying why in /status, polling again with backoff; the
// path appears (still no _delta_log: it waits on, saying so), then the
// table is written, and a later poll compacts it with no reload.
func TestATableThatDoesNotExistYetWaitsAndIsCompactedOnceCreated(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "later")
	pdir := t.TempDir()
	writePolicy(t, pdir, "d.hcl", fastBackoff)
	writePolicy(t, pdir, "t.hcl", policyHCL("t", "file://"+dir, ""))
	ld := startRealDaemon(t, pdir, 200*time.Millisecond)

	var st *scheduler.TableStatus
	waitingFor := func(what, reason string) {
		t.Helper()
		wait(t, what, 60*time.Second, ld.logs, func() bool {
			st = tableStatus(getStatus(t, ld.base), "t")
			return st != nil && st.Waiting != nil && strings.Contains(st.Waiting.Reason, reason)
		})
		if st.Halted || st.State != scheduler.StateWaiting || st.Waiting.NextAttempt.IsZero() || st.Counters.Runs[scheduler.ResultHalt] != 0 {
			t.Fatalf("%s: %+v (waiting %+v): want waiting with a next attempt, not halted", what, st, st.Waiting)
		}
	}
	waitingFor("waiting for the missing path", "no such file or directory")
	first := st.Waiting.Attempts
	wait(t, "attempts with backoff", 60*time.Second, ld.logs, func() bool {
		w := tableStatus(getStatus(t, ld.base), "t").Waiting
		return w != nil && w.Attempts >= first+2
	})
	if !strings.Contains(metricsText(t, ld.base), `compactord_table_state{state="waiting",table="t"} 1`) {
		t.Errorf("the metrics do not show the table waiting")
	}

	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	waitingFor("waiting for a _delta_log", "no commits")

	tbl := tabletest.NewTable(t, "file://"+dir, tabletest.IDRange(0, 10), tabletest.IDRange(10, 10), tabletest.IDRange(20, 10),
		tabletest.IDRange(30, 10), tabletest.IDRange(40, 10))
	wait(t, "a poll-triggered compaction", 60*time.Second, ld.logs, func() bool {
		st = tableStatus(getStatus(t, ld.base), "t")
		return st.LastRun != nil && st.LastRun.Result == scheduler.ResultCommitted
	})
	if !strings.HasPrefix(st.LastRun.Reason, "poll:") || st.Waiting != nil || st.Halted {
		t.Fatalf("after the table appeared: %+v", st)
	}
	snap, err := delta.LoadSnapshot(t.Context(), tbl, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Files) != 1 {
		t.Fatalf("%d files after the compaction, want 1", len(snap.Files))
	}
}

// A table halted for a reason a reload or a resume can clear: its
// protocol asks for a writer feature this build lacks. The operator
// "upgrades" (removes the feature) and asks for a re-check; neither the
// policy nor the daemon changes.
func haltedFeatureTable(t *testing.T, dir string) *delta.Table {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return tabletest.NewTableWith(t, "file://"+dir, tabletest.Spec{WriterFeatures: []string{"fancyFeature"}},
		tabletest.IDRange(0, 10), tabletest.IDRange(10, 10), tabletest.IDRange(20, 10), tabletest.IDRange(30, 10), tabletest.IDRange(40, 10))
}

// fixFeature rewrites the table's first commit without the unknown feature.
func fixFeature(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, "_delta_log", "00000000000000000000.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	fixed := strings.ReplaceAll(string(b), `,"fancyFeature"`, "")
	if fixed == string(b) {
		t.Fatalf("no fancyFeature in %s", p)
	}
	if err := os.WriteFile(p, []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
}

func postBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestAReloadOrAResumeReChecksAHaltedTableWhosePolicyDidNotChange(t *testing.T) {
	for _, how := range []string{"SIGHUP", "POST /reload", "POST /tables/t/resume"} {
		t.Run(how, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "t")
			haltedFeatureTable(t, dir)
			pdir := t.TempDir()
			writePolicy(t, pdir, "t.hcl", policyHCL("t", "file://"+dir, ""))
			ld := startRealDaemon(t, pdir, time.Hour)
			var st *scheduler.TableStatus
			wait(t, "halted", 60*time.Second, ld.logs, func() bool {
				st = tableStatus(getStatus(t, ld.base), "t")
				return st != nil && st.Halted
			})
			if !strings.Contains(st.HaltReason, "fancyFeature") || st.HaltAdvice != "fix the cause, then POST /tables/t/resume or reload (SIGHUP)" {
				t.Fatalf("halt %q, advice %q", st.HaltReason, st.HaltAdvice)
			}
			code, body := postBody(t, ld.base+"/tables/t/run")
			if code != http.StatusConflict || !strings.Contains(body, "POST /tables/t/resume or reload (SIGHUP)") || strings.Contains(body, "change or reload its policy") {
				t.Fatalf("POST run of the halted table: %d %s", code, body)
			}
			if _, m := ld.logs.find(0, "table halted; fix the cause, then POST /tables/t/resume or reload (SIGHUP)", nil); m == nil {
				t.Errorf("the halt's log line does not say what clears it:\n%s", ld.logs.dump())
			}
			wait(t, "the stored halt", 60*time.Second, ld.logs, func() bool {
				raw, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(runner.HaltKey)))
				return strings.Contains(string(raw), `"halted":true`) && strings.Contains(string(raw), "fancyFeature")
			})

			fixFeature(t, dir)
			switch how {
			case "SIGHUP":
				ld.sigs <- syscall.SIGHUP
			case "POST /reload":
				if code := post(t, ld.base+"/reload"); code != http.StatusOK {
					t.Fatalf("POST /reload: %d", code)
				}
			default:
				if code, body := postBody(t, ld.base+"/tables/t/resume"); code != http.StatusOK || !strings.Contains(body, "resumed") {
					t.Fatalf("POST resume: %d %s", code, body)
				}
			}
			// The re-check polls at once: the table is readable now and
			// its small files trigger a run.
			wait(t, "compacted after the re-check", 60*time.Second, ld.logs, func() bool {
				st = tableStatus(getStatus(t, ld.base), "t")
				return !st.Halted && st.Counters.Runs[scheduler.ResultCommitted] == 1
			})
			var stored struct {
				Halted bool `json:"halted"`
			}
			raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(runner.HaltKey)))
			if err != nil || json.Unmarshal(raw, &stored) != nil || stored.Halted {
				t.Fatalf("after the re-check the stored halt is %s (%v)", raw, err)
			}
		})
	}
}

// A halt survives a restart: the new daemon shows the table halted with
// its reason before any run, never runs it, until POST resume; then the
// stored halt is cleared (for every replica) and the table runs.
func TestAHaltSurvivesARestartUntilResumed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	tbl := haltedFeatureTable(t, dir)
	pdir := t.TempDir()
	writePolicy(t, pdir, "t.hcl", policyHCL("t", "file://"+dir, ""))
	ld := startRealDaemon(t, pdir, time.Hour)
	wait(t, "halted", 60*time.Second, ld.logs, func() bool {
		st := tableStatus(getStatus(t, ld.base), "t")
		return st != nil && st.Halted
	})
	reason := tableStatus(getStatus(t, ld.base), "t").HaltReason
	wait(t, "the stored halt", 60*time.Second, ld.logs, func() bool {
		raw, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(runner.HaltKey)))
		return strings.Contains(string(raw), `"halted":true`)
	})
	ld.stop(t)

	// Fixed while the daemon is down: the stored halt still holds.
	fixFeature(t, dir)
	ld = startRealDaemon(t, pdir, time.Hour)
	var st *scheduler.TableStatus
	wait(t, "halted from the stored halt", 60*time.Second, ld.logs, func() bool {
		st = tableStatus(getStatus(t, ld.base), "t")
		return st != nil && st.Halted
	})
	if st.Counters.Polls != 0 || st.HaltReason != reason || st.HaltedSince == nil || st.LastRun != nil {
		t.Fatalf("after the restart: %+v, want halted with %q and no run", st, reason)
	}
	if code := post(t, ld.base+"/tables/t/run"); code != http.StatusConflict {
		t.Fatalf("POST run after the restart: %d, want 409", code)
	}
	if code, body := postBody(t, ld.base+"/tables/t/resume"); code != http.StatusOK {
		t.Fatalf("POST resume: %d %s", code, body)
	}
	wait(t, "compacted after the resume", 60*time.Second, ld.logs, func() bool {
		st = tableStatus(getStatus(t, ld.base), "t")
		return !st.Halted && st.Counters.Runs[scheduler.ResultCommitted] == 1
	})
	if code, body := postBody(t, ld.base+"/tables/t/resume"); code != http.StatusOK || !strings.Contains(body, "not halted") {
		t.Fatalf("POST resume of a running table: %d %s", code, body)
	}
	if code, _ := postBody(t, ld.base+"/tables/nope/resume"); code != http.StatusNotFound {
		t.Fatalf("POST resume of an unknown table: %d", code)
	}
	ld.stop(t)

	// Resumed is resumed across restarts too.
	ld = startRealDaemon(t, pdir, time.Hour)
	if st := tableStatus(getStatus(t, ld.base), "t"); st.Halted {
		t.Fatalf("halted again after a restart that followed the resume: %+v", st)
	}
	if snap := tabletest.Latest(t, tbl); len(snap.Files) != 1 {
		t.Fatalf("%d files, want 1", len(snap.Files))
	}
}

func TestThePlanOfAHaltedTableAnswers409WithTheHaltReason(t *testing.T) {
	dir, fb, be := memTableDaemon(t, "h")
	unsupported := errors.New("table h: writer feature \"fancyFeature\" is not supported")
	be.Run = func(ctx context.Context, req scheduler.RunRequest[policies.Policy]) (scheduler.RunReport, error) {
		return scheduler.RunReport{}, failure.With(failure.Halt, unsupported)
	}
	// What halts a run usually stops its plan too.
	be.Plan = func(ctx context.Context, p policies.Policy, exclude map[string]bool) (any, error) {
		return nil, failure.With(failure.Halt, unsupported)
	}
	td := startTestDaemonWith(t, dir, fb, be)
	if code := post(t, td.base+"/tables/h/run"); code != http.StatusAccepted {
		t.Fatalf("POST run: %d", code)
	}
	waitFor(t, "h halted", func() bool { return td.d.Scheduler().Status()[0].Halted })

	code, body := get(t, td.base+"/tables/h/plan")
	if code != http.StatusConflict {
		t.Fatalf("GET plan of a halted table: %d %s, want 409", code, body)
	}
	if !strings.Contains(body, "halted") || !strings.Contains(body, "fancyFeature") {
		t.Errorf("body %s does not say the table is halted and why", body)
	}
	if code := post(t, td.base+"/tables/h/run"); code != http.StatusConflict {
		t.Errorf("POST run of a halted table: %d, want 409", code)
	}
}
