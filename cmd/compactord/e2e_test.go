package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	deltadv "github.com/compactord/compactord/delta/dv"
	"github.com/compactord/compactord/internal/demo"
	"github.com/compactord/compactord/internal/httpapi"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/runner"
	"github.com/compactord/compactord/scheduler"
	"github.com/hashicorp/go-hclog"
)

// The end-to-end test runs the real binary against file:// tables while this
// process plays the ingestion job (an appender) and a DML job (a DV
// deleter). Every wait below is for a state the daemon reports; none is a
// timing assertion except the 10 s SIGTERM bound the acceptance names.

// binary builds compactord once per test binary.
func buildBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "compactord")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// logLines collects the daemon's JSON log lines.
type logLines struct {
	mu    sync.Mutex
	lines []map[string]any
	raw   []string
}

// jsonLog is the daemon's logger at info level writing JSON lines, and
// the lines it wrote.
func jsonLog(t *testing.T) (*logLines, hclog.Logger) {
	t.Helper()
	pr, pw := io.Pipe()
	logs := &logLines{}
	go logs.read(pr)
	t.Cleanup(func() { pw.Close() })
	return logs, hclog.New(&hclog.LoggerOptions{Name: "compactord", Output: pw, JSONFormat: true, Level: hclog.Info})
}

func (l *logLines) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var m map[string]any
		line := sc.Text()
		_ = json.Unmarshal([]byte(line), &m)
		l.mu.Lock()
		l.raw = append(l.raw, line)
		if m != nil {
			l.lines = append(l.lines, m)
		}
		l.mu.Unlock()
	}
}

// find returns the first line at or after from whose message and fields match.
func (l *logLines) find(from int, msg string, fields map[string]string) (int, map[string]any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := from; i < len(l.lines); i++ {
		m := l.lines[i]
		if m["@message"] != msg {
			continue
		}
		ok := true
		for k, v := range fields {
			if fmt.Sprint(m[k]) != v {
				ok = false
			}
		}
		if ok {
			return i, m
		}
	}
	return -1, nil
}

func (l *logLines) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lines)
}

func (l *logLines) dump() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.raw, "\n")
}

// writers is the ingestion side: appends and DV deletes on one table,
// recording exactly which ids were committed and which deletions landed.
type writers struct {
	t        *delta.Table
	mu       sync.Mutex
	nextID   int64
	deleted  map[int64]bool
	appends  int
	deletes  int
	failures int
	err      error
}

func (w *writers) append(ctx context.Context, files int, rows int64) error {
	w.mu.Lock()
	first := w.nextID
	w.mu.Unlock()
	if _, err := demo.Append(ctx, w.t, files, rows, first, time.Now(), "compactord-demo/"+version); err != nil {
		return err
	}
	w.mu.Lock()
	w.nextID = first + int64(files)*rows
	w.appends++
	w.mu.Unlock()
	return nil
}

// deleteSome deletes live rows with id % 13 == k; a delete that loses to a
// compaction (its file was rewritten) fails and is simply not recorded.
func (w *writers) deleteSome(ctx context.Context, k int64) {
	var matched []int64
	res, err := demo.Delete(ctx, w.t, nil, func(id int64) bool {
		if id%13 == k {
			matched = append(matched, id)
			return true
		}
		return false
	}, "compactord-demo/"+version)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.failures++
		return
	}
	if res.RowsDeleted != int64(len(matched)) {
		w.err = fmt.Errorf("delete reported %d rows, matched %d", res.RowsDeleted, len(matched))
	}
	for _, id := range matched {
		w.deleted[id] = true
	}
	w.deletes++
}

func (w *writers) expected() []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ids []int64
	for id := int64(0); id < w.nextID; id++ {
		if !w.deleted[id] {
			ids = append(ids, id)
		}
	}
	return ids
}

func newTable(t *testing.T, dir string, commits, files int, rows int64) (*writers, string) {
	t.Helper()
	ctx := context.Background()
	url := "file://" + dir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tb, err := delta.OpenTable(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Close() })
	if err := demo.CreateTable(ctx, tb, time.Now(), "compactord-demo/"+version); err != nil {
		t.Fatal(err)
	}
	w := &writers{t: tb, deleted: map[int64]bool{}}
	for i := 0; i < commits; i++ {
		if err := w.append(ctx, files, rows); err != nil {
			t.Fatal(err)
		}
	}
	return w, url
}

func policyHCL(name, url string, extra string) string {
	return fmt.Sprintf("table %q {\n  url           = %q\n  strategy      = \"auto\"\n  settle_window = \"0s\"\n%s\n  triggers {\n    small_files = 4\n  }\n}\n", name, url, extra)
}

// overwriteWithGarbage replaces the file at path with as many random bytes
// (the stream seeded seed, seed+1): a corrupt file of the same size.
func overwriteWithGarbage(t *testing.T, path string, seed uint64) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	garbage := make([]byte, st.Size())
	r := rand.New(rand.NewPCG(seed, seed+1))
	for i := range garbage {
		garbage[i] = byte(r.IntN(256))
	}
	if err := os.WriteFile(path, garbage, 0o644); err != nil {
		t.Fatal(err)
	}
}

// treeDigest hashes every file under dir (paths and contents) but
// compactord's own records (_compactord/: the stored halt of a halted
// table among them).
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == "_compactord" {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s\x00%d\x00", rel, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// orphans lists data and DV files under a table dir that no commit in its
// log mentions: files an abandoned attempt failed to clean up.
func orphans(t *testing.T, dir string) []string {
	t.Helper()
	known := map[string]bool{}
	logs, _ := filepath.Glob(filepath.Join(dir, "_delta_log", "*.json"))
	for _, lf := range logs {
		b, err := os.ReadFile(lf)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			a, err := actions.ParseAction([]byte(line))
			if err != nil {
				t.Fatalf("%s: %v", lf, err)
			}
			var path string
			var dv *actions.DeletionVector
			switch {
			case a.Add != nil:
				path, dv = a.Add.Path, a.Add.DeletionVector
			case a.Remove != nil:
				path, dv = a.Remove.Path, a.Remove.DeletionVector
			default:
				continue
			}
			if k, err := actions.DecodePath(path); err == nil {
				known[k] = true
			}
			if dv != nil && dv.StorageType == "u" {
				if k, err := deltadv.DVFileKey(dv.PathOrInlineDv); err == nil {
					known[k] = true
				}
			}
		}
	}
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if d != nil && d.IsDir() && d.Name() == "_delta_log" {
				return filepath.SkipDir
			}
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		// The quarantine list and the halt are compactord's records of the table, kept.
		if k := filepath.ToSlash(rel); !known[k] && k != runner.QuarantineKey && k != runner.HaltKey {
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func getStatus(t *testing.T, base string) httpapi.StatusPage {
	t.Helper()
	resp, err := http.Get(base + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page httpapi.StatusPage
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	return page
}

func tableStatus(p httpapi.StatusPage, name string) *scheduler.TableStatus {
	for i := range p.Tables {
		if p.Tables[i].Name == name {
			return &p.Tables[i]
		}
	}
	return nil
}

func metricsText(t *testing.T, base string) string {
	_, body := get(t, base+"/metrics")
	return body
}

func wait(t *testing.T, what string, d time.Duration, logs *logLines, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s\ndaemon log:\n%s", what, logs.dump())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// policyRoot makes a test directory with an empty policies/ inside.
func policyRoot(t *testing.T) (root, pol string) {
	t.Helper()
	root = t.TempDir()
	pol = filepath.Join(root, "policies")
	if err := os.MkdirAll(pol, 0o755); err != nil {
		t.Fatal(err)
	}
	return root, pol
}

// daemonProc is a running compactord binary whose JSON log is collected.
type daemonProc struct {
	cmd    *exec.Cmd
	logs   *logLines
	exited chan error
	// base is http://ADDR of its listener.
	base string
}

// startDaemonProc starts bin with args (which must ask for JSON logs and
// an HTTP listener) and waits for its listener; the test's cleanup kills it
// if it still runs.
func startDaemonProc(t *testing.T, bin string, args ...string) *daemonProc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &daemonProc{cmd: cmd, logs: &logLines{}, exited: make(chan error, 1)}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	readDone := make(chan struct{})
	go func() { p.logs.read(stderr); close(readDone) }()
	go func() { <-readDone; p.exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	wait(t, "http address", 20*time.Second, p.logs, func() bool {
		_, m := p.logs.find(0, "http listening", nil)
		if m != nil {
			p.base = "http://" + fmt.Sprint(m["addr"])
		}
		return m != nil
	})
	return p
}

func TestEndToEndTheRealBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	ctx := context.Background()
	start := time.Now()
	step := func(what string) { t.Logf("%6.1fs %s", time.Since(start).Seconds(), what) }
	bin := buildBinary(t)
	step("built")
	root, pol := policyRoot(t)

	// Tables: events (live writers), old (removed by SIGHUP), broken (a
	// corrupt data file), features (a protocol compactord cannot write),
	// big (long enough runs to catch one in flight at SIGTERM); orders is
	// added by SIGHUP.
	events, eventsURL := newTable(t, filepath.Join(root, "events"), 3, 2, 50)
	_, oldURL := newTable(t, filepath.Join(root, "old"), 2, 3, 20)
	broken, brokenURL := newTable(t, filepath.Join(root, "broken"), 4, 2, 30)
	orders, ordersURL := newTable(t, filepath.Join(root, "orders"), 3, 3, 20)
	big, bigURL := newTable(t, filepath.Join(root, "big"), 40, 10, 400)

	step("tables written")
	// Corrupt one data file of broken: same size, garbage bytes.
	snap, err := delta.LoadSnapshot(ctx, broken.t, -1)
	if err != nil {
		t.Fatal(err)
	}
	corrupt := snap.Files[3].Path
	corruptFile := filepath.Join(root, "broken", corrupt)
	overwriteWithGarbage(t, corruptFile, 1)

	// A copy of a table whose protocol this build refuses.
	featDir := filepath.Join(root, "features")
	if err := os.CopyFS(featDir, os.DirFS(testutil.DeltaTable(t, "many-table-features"))); err != nil {
		t.Fatal(err)
	}
	featDigest := treeDigest(t, featDir)

	writePolicy(t, pol, "events.hcl", policyHCL("events", eventsURL, ""))
	writePolicy(t, pol, "old.hcl", policyHCL("old", oldURL, ""))
	writePolicy(t, pol, "broken.hcl", policyHCL("broken", brokenURL, ""))
	writePolicy(t, pol, "features.hcl", policyHCL("features", "file://"+featDir, ""))
	// big runs only on demand: its trigger is out of reach.
	writePolicy(t, pol, "big.hcl", strings.Replace(policyHCL("big", bigURL, ""), "small_files = 4", "small_files = 100000", 1))

	proc := startDaemonProc(t, bin, "run", "--policies", pol, "--http", "127.0.0.1:0", "--poll", "1s",
		"--log-format", "json", "--log-level", "debug", "--shutdown-timeout", "200ms", "--workers", "2")
	cmd, logs, exited, base := proc.cmd, proc.logs, proc.exited, proc.base

	// The writers run for the whole test.
	wctx, stopWriters := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for wctx.Err() == nil {
			if err := events.append(wctx, 2, 50); err != nil && wctx.Err() == nil {
				t.Errorf("append: %v", err)
				return
			}
			time.Sleep(150 * time.Millisecond)
		}
	}()
	go func() {
		defer wg.Done()
		for k := int64(0); wctx.Err() == nil; k = (k + 1) % 13 {
			events.deleteSome(wctx, k)
			time.Sleep(200 * time.Millisecond)
		}
	}()

	step("daemon up")
	// 1. A poll trigger compacts events (and the unwritable table halts).
	wait(t, "a poll-triggered compaction of events", 60*time.Second, logs, func() bool {
		i, m := logs.find(0, "run starting", map[string]string{"@module": "compactord.scheduler.events"})
		if m == nil || !strings.HasPrefix(fmt.Sprint(m["reason"]), "poll:") {
			return false
		}
		_, done := logs.find(i, "run finished", map[string]string{"@module": "compactord.scheduler.events", "result": "committed"})
		return done != nil
	})
	page := getStatus(t, base)
	ev := tableStatus(page, "events")
	if ev == nil || ev.Counters.Runs[scheduler.ResultCommitted] < 1 || ev.Backlog == nil || ev.LastVersion < 3 {
		t.Fatalf("events status after the poll run: %+v", ev)
	}
	m := metricsText(t, base)
	if !strings.Contains(m, `compactord_runs_total{result="committed",table="events"} `) ||
		strings.Contains(m, `compactord_runs_total{result="committed",table="events"} 0`) {
		t.Fatalf("metrics do not show the committed run:\n%s", m)
	}

	step("poll run seen")
	// The plan preview uses the same planner on the live table.
	if code, body := get(t, base+"/tables/events/plan"); code != 200 || !strings.Contains(body, `"readVersion"`) {
		t.Fatalf("plan of events: %d %s", code, body)
	}
	wait(t, "features halted", 30*time.Second, logs, func() bool {
		f := tableStatus(getStatus(t, base), "features")
		return f != nil && f.Halted
	})
	f := tableStatus(getStatus(t, base), "features")
	if !strings.Contains(f.HaltReason, "cannot be compacted") || !strings.Contains(metricsText(t, base), `compactord_table_halted{table="features"} 1`) {
		t.Fatalf("features: %+v", f)
	}

	step("features halted")
	if code, body := get(t, base+"/tables/features/plan"); code != http.StatusConflict || !strings.Contains(body, "blahabl") || !strings.Contains(body, "halt_reason") {
		t.Fatalf("plan of the unwritable table: %d %s", code, body)
	}
	// 2. The corrupt file is quarantined and the rest of broken compacts.
	wait(t, "broken quarantined then compacted", 60*time.Second, logs, func() bool {
		b := tableStatus(getStatus(t, base), "broken")
		return b != nil && len(b.Quarantined) == 1 && b.Counters.Runs[scheduler.ResultCommitted] >= 1
	})
	b := tableStatus(getStatus(t, base), "broken")
	if b.Quarantined[0] != corrupt || b.Counters.Runs[scheduler.ResultQuarantine] < 1 || b.Halted {
		t.Fatalf("broken: %+v", b)
	}
	if !strings.Contains(metricsText(t, base), `compactord_quarantined_files{table="broken"} 1`) {
		t.Fatalf("metrics lack the quarantined file")
	}
	bsnap, err := delta.LoadSnapshot(ctx, broken.t, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(bsnap.Files) != 2 { // the compacted output + the quarantined file
		t.Fatalf("broken has %d files after compaction, want 2", len(bsnap.Files))
	}

	step("broken quarantined")
	// 3. SIGUSR1 runs every enabled table at once. old, broken and big have
	// nothing that would trigger them now (old and broken were compacted
	// and get no new commits; big's trigger is out of reach), so a run of
	// theirs with reason "signal" is the signal's doing. events, fed by the
	// writers, may already have a run queued, which satisfies the signal.
	wait(t, "old idle after its first run", 30*time.Second, logs, func() bool {
		o := tableStatus(getStatus(t, base), "old")
		return o != nil && o.LastRun != nil && o.State == scheduler.StateIdle
	})
	before := tableStatus(getStatus(t, base), "big").Counters.Runs[scheduler.ResultCommitted]
	from := logs.len()
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	wait(t, "signal runs", 60*time.Second, logs, func() bool {
		_, sig := logs.find(from, "SIGUSR1: running every enabled table now", map[string]string{"tables": "4"})
		_, e := logs.find(from, "run starting", map[string]string{"@module": "compactord.scheduler.events"})
		found := sig != nil && e != nil
		for _, name := range []string{"old", "broken"} {
			_, m := logs.find(from, "run starting", map[string]string{"@module": "compactord.scheduler." + name, "reason": "signal"})
			found = found && m != nil
		}
		_, b := logs.find(from, "run finished", map[string]string{"@module": "compactord.scheduler.big", "result": "committed"})
		return found && b != nil
	})
	if _, hf := logs.find(from, "run starting", map[string]string{"@module": "compactord.scheduler.features"}); hf != nil {
		t.Fatalf("the halted table ran on SIGUSR1")
	}
	if got := tableStatus(getStatus(t, base), "big").Counters.Runs[scheduler.ResultCommitted]; got != before+1 {
		t.Fatalf("/status: big committed runs %d -> %d after SIGUSR1", before, got)
	}
	if m := metricsText(t, base); !strings.Contains(m, `compactord_runs_total{result="committed",table="big"} 1`) {
		t.Fatalf("/metrics does not show big's signal run:\n%s", m)
	}

	step("signal runs seen")
	// 4. SIGHUP: old removed, orders added.
	if err := os.Remove(filepath.Join(pol, "old.hcl")); err != nil {
		t.Fatal(err)
	}
	writePolicy(t, pol, "orders.hcl", policyHCL("orders", ordersURL, ""))
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	wait(t, "reload", 30*time.Second, logs, func() bool {
		p := getStatus(t, base)
		o := tableStatus(p, "orders")
		return tableStatus(p, "old") == nil && o != nil && o.Counters.Runs[scheduler.ResultCommitted] >= 1
	})
	m = metricsText(t, base)
	if strings.Contains(m, `table="old"`) || !strings.Contains(m, `compactord_policy_reloads_total{result="success"} 1`) ||
		!strings.Contains(m, `compactord_backlog_small_files{table="orders"}`) {
		t.Fatalf("metrics after reload:\n%s", m)
	}
	osnap, err := delta.LoadSnapshot(ctx, orders.t, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(osnap.Files) != 1 {
		t.Fatalf("orders has %d files after its compaction", len(osnap.Files))
	}

	step("reload seen")
	// 5. More data for big, then SIGTERM while its run is in flight.
	for i := 0; i < 20; i++ {
		if err := big.append(ctx, 10, 400); err != nil {
			t.Fatal(err)
		}
	}
	step("big grown")
	from = logs.len()
	if code := post(t, base+"/tables/big/run"); code != http.StatusAccepted {
		t.Fatalf("POST /tables/big/run: %d", code)
	}
	wait(t, "big running", 30*time.Second, logs, func() bool {
		_, m := logs.find(from, "run starting", map[string]string{"@module": "compactord.scheduler.big", "reason": "api"})
		return m != nil
	})
	termAt := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("daemon exit: %v\n%s", err, logs.dump())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("daemon still running 10 s after SIGTERM\n%s", logs.dump())
	}
	t.Logf("exited %v after SIGTERM", time.Since(termAt).Round(time.Millisecond))
	if _, m := logs.find(from, "run finished", map[string]string{"@module": "compactord.scheduler.big"}); m != nil {
		t.Logf("big's in-flight run finished within the shutdown timeout: %v", m["result"])
	} else if _, c := logs.find(from, "run cancelled by shutdown or removal", map[string]string{"@module": "compactord.scheduler.big"}); c != nil {
		t.Logf("big's in-flight run was cancelled at the shutdown deadline")
	} else {
		t.Fatalf("big's in-flight run neither finished nor was cancelled:\n%s", logs.dump())
	}
	stopWriters()
	wg.Wait()

	step("stopped")
	// 6. No uncommitted files anywhere; content is what the writers wrote.
	for _, name := range []string{"events", "broken", "orders", "big", "old"} {
		if o := orphans(t, filepath.Join(root, name)); len(o) > 0 {
			t.Fatalf("%s has files no commit mentions: %v", name, o)
		}
	}
	for name, w := range map[string]*writers{"events": events, "orders": orders, "big": big} {
		_, ids, err := demo.Summarize(ctx, w.t)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := demo.SameIDs(w.expected(), ids); err != nil {
			t.Fatalf("%s content: %v", name, err)
		}
	}
	if got := treeDigest(t, featDir); got != featDigest {
		t.Fatalf("the unwritable table was modified")
	}
	events.mu.Lock()
	if events.err != nil {
		t.Fatal(events.err)
	}
	t.Logf("events: %d appends, %d deletes committed, %d deletes lost to compaction", events.appends, events.deletes, events.failures)
	events.mu.Unlock()
	if errors.Is(ctx.Err(), context.Canceled) {
		t.Fatal("unreachable")
	}
}
