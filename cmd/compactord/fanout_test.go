package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/fanout"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/planner"
)

// fanoutPlan builds a table of files files of 20 ids and plans it with a
// target so small that every two files make one job (one unit each).
func fanoutPlan(t *testing.T, files int) (*delta.Table, *planner.CompactionPlan) {
	t.Helper()
	tbl := tabletest.NewTable(t, "file://"+t.TempDir(), tabletest.Batches(files, 20)...)
	pol := planner.DefaultPolicy()
	pol.SettleWindow = 0
	var largest int64
	for _, f := range tabletest.Latest(t, tbl).Files {
		largest = max(largest, f.Size)
	}
	pol.TargetFileSize = 2*largest + 1
	pol.MinFileSize = pol.TargetFileSize
	pl, _, err := compaction.PlanTable(context.Background(), tbl, compaction.RunOptions{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Jobs) != files/2 {
		t.Fatalf("%d jobs, want %d", len(pl.Jobs), files/2)
	}
	return tbl, pl
}

// The worker contract for real: a fanned-out run of 7 units as `compactord
// run-unit` processes (3 at once, JOB_COMPLETION_INDEX set as the Job
// controller sets it), unit 2 SIGKILLed after writing its outputs and
// before its manifest and started again, unit 5 exiting with the
// quarantine code on a corrupt source, while a DV DELETE of unit 2's
// source rows and an append land; the coordinator commits every 2 jobs.
func TestFanoutRunSurvivesAKilledWorkerAQuarantineAndConcurrentWriters(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs worker processes")
	}
	bin := buildBinary(t)
	tbl, pl := fanoutPlan(t, 14)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	snap0 := tabletest.Latest(t, tbl)
	byPath := map[string]*actions.Add{}
	for _, f := range snap0.Files {
		byPath[f.Path] = f
	}
	want := map[int64]bool{}
	for _, f := range snap0.Files {
		for _, id := range tabletest.FileIDs(t, tbl, f) {
			want[id] = true
		}
	}

	// Unit 5 reads a source whose bytes are garbage (same size).
	bad := pl.Jobs[5].SourcePaths[0]
	for _, id := range tabletest.FileIDs(t, tbl, byPath[bad]) {
		delete(want, id) // unreadable: left alone, checked by bytes below
	}
	garbage := []byte(strings.Repeat("corrupt!", int(byPath[bad].Size)/8+1))[:byPath[bad].Size]
	if err := tbl.Bucket.WriteAll(ctx, bad, garbage, nil); err != nil {
		t.Fatal(err)
	}

	pauseDir := t.TempDir()
	launcher := &fanout.ProcessLauncher{Binary: bin, Args: []string{"--log-level", "info"},
		Env:    []string{testPauseEnv + "=2:" + pauseDir},
		Stderr: testLogWriter{t}}
	opts := runOptions(tabletest.Logger(t))
	opts.Executor = &fanout.Executor{Launcher: launcher, Parallelism: 3, BackoffLimitPerIndex: 2}
	opts.CommitEveryJobs = 2
	type outcome struct {
		res *compaction.RunResult
		err error
	}
	ran := make(chan outcome, 1)
	go func() {
		res, err := compaction.RunPlan(ctx, tbl, pl, opts)
		ran <- outcome{res, err}
	}()

	// Unit 2's first attempt has written its outputs and waits before its
	// manifest: the table moves on, then the worker is SIGKILLed.
	pid := waitForPid(t, ctx, filepath.Join(pauseDir, "unit-2.pid"))
	killedOutputs := intentKeys(t, tbl, 2)
	if len(killedOutputs) == 0 {
		t.Fatal("the paused attempt recorded no output in its intent record")
	}
	src := pl.Jobs[2].SourcePaths[0]
	ids := tabletest.FileIDs(t, tbl, byPath[src])
	deleted := []int64{ids[1], ids[4], ids[7]}
	tabletest.DeleteIDs(t, tbl, deleted...)
	for _, id := range deleted {
		delete(want, id)
	}
	appended := tabletest.IDRange(10_000, 15)
	tabletest.Append(t, tbl, "", appended)
	for _, id := range appended {
		want[id] = true
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill unit 2's worker %d: %v", pid, err)
	}

	out := <-ran
	res, err := out.res, out.err
	if res == nil {
		t.Fatalf("run failed: %v", err)
	}
	if got := failure.CorruptDataFiles(err); !slices.Equal(got, []string{bad}) {
		t.Fatalf("run error %v names %v for quarantine, want [%s]", err, got, bad)
	}
	if res.JobsFailed != 1 || res.JobsCommitted != 6 || res.Commits < 2 {
		t.Fatalf("jobs failed %d, committed %d in %d commits; want 1, 6 in 2 or more", res.JobsFailed, res.JobsCommitted, res.Commits)
	}
	var remapped int64
	for _, r := range res.Reconciled {
		if r.Source == src {
			remapped += r.RowsRemapped
		}
	}
	if remapped != int64(len(deleted)) {
		t.Fatalf("reconciled %+v, want %d rows of %s", res.Reconciled, len(deleted), src)
	}

	// Content: every id once, the corrupt source live and untouched.
	snap := tabletest.Latest(t, tbl)
	got := map[int64]int{}
	badLive := false
	for _, f := range snap.Files {
		if f.Path == bad {
			badLive = true
			continue
		}
		dv, err := delta.ReadDV(ctx, tbl, f.DeletionVector)
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range tabletest.FileIDs(t, tbl, f) {
			if !dv.Contains(uint64(i)) {
				got[id]++
			}
		}
	}
	if !badLive {
		t.Fatalf("the corrupt source %s is no longer live", bad)
	}
	if b, err := tbl.Bucket.ReadAll(ctx, bad); err != nil || string(b) != string(garbage) {
		t.Fatalf("the corrupt source %s was changed (%v)", bad, err)
	}
	for id := range want {
		if got[id] != 1 {
			t.Errorf("id %d live %d times, want once", id, got[id])
		}
	}
	for id := range got {
		if !want[id] {
			t.Errorf("id %d is live, want it gone", id)
		}
	}

	// No orphans: every object is the log, a live or tombstoned data file or
	// one of their deletion vectors; the plan directory is gone, and so are
	// the killed attempt's outputs.
	assertNoOrphans(t, tbl)
	for _, k := range killedOutputs {
		if ok, _ := tbl.Bucket.Exists(ctx, k); ok {
			t.Errorf("the killed attempt's output %s is still there", k)
		}
	}
}

// waitForPid waits for the test hook's pid file of a paused worker.
func waitForPid(t *testing.T, ctx context.Context, file string) int {
	t.Helper()
	for {
		b, err := os.ReadFile(file)
		if err == nil && len(b) > 0 {
			pid, err := strconv.Atoi(string(b))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no paused worker (%s): %v", file, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// intentKeys lists the data files the intent records of unit i name.
func intentKeys(t *testing.T, tbl *delta.Table, i int) []string {
	t.Helper()
	var out []string
	for _, k := range tabletest.Keys(t, tbl) {
		if !strings.Contains(k, "/units/"+strconv.Itoa(i)+"/intent-") {
			continue
		}
		b, err := tbl.Bucket.ReadAll(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		var rec struct{ Keys []string }
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatal(err)
		}
		for _, x := range rec.Keys {
			if strings.HasSuffix(x, ".parquet") {
				out = append(out, x)
			}
		}
	}
	return out
}

// assertNoOrphans checks that every object of tbl outside the log is a
// data file or deletion vector a commit names (the plan directory among
// the rest must be gone).
func assertNoOrphans(t *testing.T, tbl *delta.Table) {
	t.Helper()
	ref := tabletest.LogReferenced(t, tbl)
	for k := range tabletest.StoreObjects(t, tbl) {
		if !ref[k] {
			t.Errorf("orphan object %s", k)
		}
	}
}

// testLogWriter sends the workers' stderr to the test log.
type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// `run-plan --executor process` fans a plan file out to run-unit children
// of the same binary and commits what they wrote, leaving no plan behind;
// the workers (the binary behind a script that records their arguments)
// are started with the coordinator's --store-* flags.
func TestRunPlanWithTheProcessExecutorCommitsEveryUnit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs worker processes")
	}
	bin := buildBinary(t)
	tbl, pl := fanoutPlan(t, 8)
	want := map[int64]bool{}
	for _, f := range tabletest.Latest(t, tbl).Files {
		for _, id := range tabletest.FileIDs(t, tbl, f) {
			want[id] = true
		}
	}
	planPath := filepath.Join(t.TempDir(), "plan.json")
	f, err := os.Create(planPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeJSONTo(f, planFile{Table: tbl.URL, CompactionPlan: pl}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	dir := t.TempDir()
	started, worker := filepath.Join(dir, "started"), filepath.Join(dir, "worker.sh")
	if err := os.WriteFile(worker, []byte("#!/bin/sh\necho \"$*\" >> "+started+"\nexec "+bin+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "run-plan", planPath, "--executor", "process", "--parallelism", "2", "--json", "--worker-binary", worker,
		"--store-attempts", "7", "--store-write-timeout", "3m", "--store-retry-budget", "50").Output()
	if err != nil {
		t.Fatalf("run-plan: %v\n%s", err, out)
	}
	starts, err := os.ReadFile(started)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(starts)), "\n")
	for _, line := range lines {
		if !strings.HasSuffix(line, " --log-level warn --store-attempts=7 --store-retry-budget=50 --store-write-timeout=3m0s") {
			t.Errorf("a worker started as %q, without the coordinator's store flags", line)
		}
	}
	if len(lines) != len(pl.Jobs) {
		t.Errorf("%d workers started, want %d (one per unit):\n%s", len(lines), len(pl.Jobs), starts)
	}
	var res struct {
		Status        string `json:"status"`
		JobsCommitted int    `json:"jobsCommitted"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Status != statusCommitted || res.JobsCommitted != len(pl.Jobs) {
		t.Fatalf("run-plan said %s (%v)", out, err)
	}
	tabletest.WantIDs(t, tbl, want)
	assertNoOrphans(t, tbl)
	if _, err := exec.Command(bin, "run-plan", planPath, "--executor", "nowhere").Output(); err == nil {
		t.Fatal("run-plan accepted --executor nowhere")
	}
}

// The daemon's process workers (a policy's executor "process" block) log
// their stderr into the daemon's log as the table's warnings, one line
// each, as run-plan's do: a worker that dies on a corrupt source names it
// in a line of its own, with its exit error after it, not only inside the
// run's error.
func TestTheDaemonsProcessWorkersLogTheirStderrToTheDaemonsLog(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs the daemon and its workers")
	}
	bin := buildBinary(t)
	root, pol := policyRoot(t)
	w, url := newTable(t, filepath.Join(root, "broken"), 4, 2, 30)
	f := tabletest.Latest(t, w.t).Files[0]
	key, err := actions.DecodePath(f.Path)
	if err != nil {
		t.Fatal(err)
	}
	garbage := []byte(strings.Repeat("garbage!", int(f.Size)/8+1))[:f.Size]
	if err := w.t.Bucket.WriteAll(context.Background(), key, garbage, nil); err != nil {
		t.Fatal(err)
	}
	writePolicy(t, pol, "broken.hcl", policyHCL("broken", url, "  executor {\n    kind = \"process\"\n    backoff_limit_per_index = 0\n  }"))
	proc := startDaemonProc(t, bin, "run", "--policies", pol, "--http", "127.0.0.1:0", "--poll", "1s",
		"--log-format", "json", "--log-level", "info", "--shutdown-timeout", "200ms")
	wait(t, "the first run of broken", 60*time.Second, proc.logs, func() bool {
		_, m := proc.logs.find(0, "run finished", map[string]string{"@module": "compactord.scheduler.broken"})
		return m != nil
	})
	table := map[string]string{"@module": "compactord.run.broken", "@level": "warn"}
	i, m := proc.logs.find(0, "worker: "+fanout.QuarantineLine(key), table)
	if m == nil {
		t.Fatalf("no line of the worker naming the corrupt source %s in the daemon's log:\n%s", key, proc.logs.dump())
	}
	proc.logs.mu.Lock()
	after := slices.Clone(proc.logs.lines[i+1:])
	proc.logs.mu.Unlock()
	for _, l := range after {
		if msg := fmt.Sprint(l["@message"]); strings.HasPrefix(msg, "worker: compactord run-unit: ") && strings.Contains(msg, key) &&
			l["@module"] == table["@module"] {
			return
		}
	}
	t.Fatalf("no line of the worker's exit error after its quarantine line:\n%s", proc.logs.dump())
}
