package fanout

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/internal/testutil"
)

// worker writes a shell script standing in for `compactord run-unit`: it
// appends its index and arguments to a log and behaves by index.
func worker(t *testing.T, body string) (bin, log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "starts")
	bin = filepath.Join(dir, "worker.sh")
	script := "#!/bin/sh\necho \"$" + IndexEnv + " $*\" >> " + log + "\n" + body
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, log
}

func TestProcessLauncherRestartsRetriesAndSignalsButNotQuarantineOrHalt(t *testing.T) {
	// Unit 0 succeeds; 1 exits quarantine, 2 halt; 3 fails with retry
	// twice then succeeds; 4 kills itself every time; 5 exits usage.
	bin, log := worker(t, `
case $JOB_COMPLETION_INDEX in
0) exit 0;;
1) echo "compactord run-unit: quarantine part-1.parquet" >&2; exit 3;;
2) exit 4;;
3) [ "$(grep -c '^3 ' "$(dirname "$0")/starts")" -ge 3 ] && exit 0; exit 1;;
4) kill -9 $$;;
5) exit 2;;
esac`)
	var mu sync.Mutex
	got := map[int]UnitStatus{}
	l := &ProcessLauncher{Binary: bin, Args: []string{"--log-level", "info"}}
	err := l.Launch(context.Background(), LaunchSpec{PlanID: "p", PlanURL: "file:///t/_compactord/plans/p/plan.json", Units: 6, Parallelism: 2, BackoffLimitPerIndex: 2},
		func(st UnitStatus) {
			mu.Lock()
			defer mu.Unlock()
			if _, dup := got[st.Index]; dup {
				t.Errorf("unit %d reported twice", st.Index)
			}
			got[st.Index] = st
		})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]struct {
		ok       bool
		code     int
		attempts int
	}{0: {true, 0, 1}, 1: {false, ExitQuarantine, 1}, 2: {false, ExitHalt, 1}, 3: {true, 0, 3}, 4: {false, -1, 3}, 5: {false, ExitUsage, 1}}
	for i, w := range want {
		st := got[i]
		if st.Succeeded != w.ok || st.ExitCode != w.code || st.Attempts != w.attempts {
			t.Errorf("unit %d: %+v, want succeeded %v, exit %d, %d attempts", i, st, w.ok, w.code, w.attempts)
		}
	}
	if !strings.Contains(got[1].Reason, "quarantine part-1.parquet") {
		t.Errorf("unit 1's reason %q does not carry its stderr", got[1].Reason)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "0 run-unit --plan file:///t/_compactord/plans/p/plan.json --log-level info\n") {
		t.Errorf("workers started as:\n%s", b)
	}
}

func TestProcessLauncherStopsItsWorkersWhenCtxEnds(t *testing.T) {
	bin, log := worker(t, "exec sleep 60")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once both workers run (never the third: Parallelism 2).
		for {
			if b, _ := os.ReadFile(log); strings.Count(string(b), "\n") >= 2 {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	var reports []UnitStatus
	start := time.Now()
	err := (&ProcessLauncher{Binary: bin, StopGrace: time.Second}).Launch(ctx, LaunchSpec{PlanID: "p", PlanURL: "u", Units: 3, Parallelism: 2, BackoffLimitPerIndex: 5},
		func(st UnitStatus) { reports = append(reports, st) })
	if err == nil {
		t.Fatal("Launch returned nil after its ctx ended")
	}
	if len(reports) != 3 {
		t.Fatalf("%d reports, want one per unit: %+v", len(reports), reports)
	}
	for _, st := range reports {
		if st.Succeeded || st.Attempts > 1 {
			t.Errorf("unit %d after cancel: %+v, want failed without restart", st.Index, st)
		}
	}
	// The workers sleep 60 s: a Launch this long did not stop them.
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("Launch took %v: the workers were not stopped", d)
	}
}

// The workers' stderr lines reach the run's logger with the plan, table
// and unit of the worker that printed them: lines of workers running at
// once can be told apart.
func TestWorkerStderrLinesNameTheirTableAndUnit(t *testing.T) {
	bin, _ := worker(t, `echo "line of unit $JOB_COMPLETION_INDEX" >&2; exit 0`)
	var out testutil.SyncBuffer
	log := hclog.New(&hclog.LoggerOptions{Output: &out, JSONFormat: true, Level: hclog.Trace})
	l := NewProcessLauncher(bin, log)
	const units = 3
	err := l.Launch(context.Background(), LaunchSpec{PlanID: "p", PlanURL: "file:///t/_compactord/plans/p/plan.json", Table: "file:///t",
		Units: units, Parallelism: units}, func(UnitStatus) {})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		msg, _ := rec["@message"].(string)
		if !strings.HasPrefix(msg, "worker: ") {
			continue
		}
		unit, ok := rec["unit"].(float64)
		if !ok || rec["table"] != "file:///t" || rec["plan"] != "p" {
			t.Errorf("worker line without its plan, table and unit: %s", line)
			continue
		}
		if want := fmt.Sprintf("worker: line of unit %d", int(unit)); msg != want {
			t.Errorf("line %q logged with unit %v", msg, unit)
		}
		seen[int(unit)] = true
	}
	if len(seen) != units {
		t.Fatalf("worker lines of units %v, want all %d:\n%s", seen, units, out.String())
	}
}
