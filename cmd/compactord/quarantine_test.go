package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/runner"
	"github.com/compactord/compactord/scheduler"
)

// runUntil asks for runs of table over POST, one at a time, until the
// table's status satisfies done, and returns it; it fails after max runs.
func (ld *loggedDaemon) runUntil(t *testing.T, table string, max int, done func(scheduler.TableStatus) bool) scheduler.TableStatus {
	t.Helper()
	runs := func(st *scheduler.TableStatus) int64 {
		var n int64
		for _, c := range st.Counters.Runs {
			n += c
		}
		return n
	}
	for i := 0; i < max; i++ {
		st := tableStatus(getStatus(t, ld.base), table)
		if done(*st) {
			return *st
		}
		before := runs(st)
		if code := post(t, ld.base+"/tables/"+table+"/run"); code != http.StatusAccepted {
			t.Fatalf("POST run: %d", code)
		}
		waitFor(t, "a run of "+table, func() bool {
			st = tableStatus(getStatus(t, ld.base), table)
			return runs(st) > before && st.State != scheduler.StateRunning && st.State != scheduler.StateQueued
		})
	}
	st := tableStatus(getStatus(t, ld.base), table)
	if !done(*st) {
		t.Fatalf("after %d runs: %+v\nlog:\n%s", max, st, ld.logs.dump())
	}
	return *st
}

// stop ends the daemon as a shutdown does, and leaves its test cleanup
// nothing to wait for.
func (ld *loggedDaemon) stop(t *testing.T) {
	t.Helper()
	ld.cancel()
	err := <-ld.done
	ld.done <- err
	if err != nil {
		t.Fatalf("daemon exited: %v", err)
	}
}

// A table whose log names a data file the store does not hold, beside good
// small files: the daemon's runs fail on it (retry) until it has been
// missing for scheduler.DefaultMissingRuns runs in a row while the newest
// snapshot still names it; then it is quarantined as missing (named in
// /status with its reason, on the page, in the metrics, in
// _compactord/quarantine.json) and the rest of the table compacts. A new
// daemon over the same table (a restart) loads the quarantine before its
// first poll: /status shows it, the backlog leaves it apart, and its runs
// never meet the missing file again.
func TestAMissingDataFileIsQuarantinedAfterItsRunsAndStaysSoAcrossARestart(t *testing.T) {
	dir := t.TempDir()
	tbl := tabletest.NewTable(t, "file://"+dir, tabletest.IDRange(0, 10), tabletest.IDRange(10, 10), tabletest.IDRange(20, 10),
		tabletest.IDRange(30, 10), tabletest.IDRange(40, 10), tabletest.IDRange(50, 10))
	snap := tabletest.Latest(t, tbl)
	gone := snap.Files[2]
	goneIDs := tabletest.FileIDs(t, tbl, gone)
	if err := os.Remove(filepath.Join(dir, filepath.FromSlash(gone.Path))); err != nil {
		t.Fatal(err)
	}
	pdir := t.TempDir()
	writePolicy(t, pdir, "t.hcl", fmt.Sprintf("table \"t\" {\n  url = %q\n  settle_window = \"0s\"\n}\n", tbl.URL))

	ld := startLoggedDaemon(t, pdir)
	st := ld.runUntil(t, "t", 2*scheduler.DefaultMissingRuns, func(st scheduler.TableStatus) bool {
		return st.Counters.Runs[scheduler.ResultCommitted] > 0
	})
	if st.Counters.Runs[scheduler.ResultRetry] != scheduler.DefaultMissingRuns-1 || st.Counters.Runs[scheduler.ResultQuarantine] != 1 {
		t.Errorf("runs %v: want %d retries, then the run that quarantines", st.Counters.Runs, scheduler.DefaultMissingRuns-1)
	}
	if len(st.Quarantine) != 1 || st.Quarantine[0].Path != gone.Path || st.Quarantine[0].Reason != scheduler.QuarantineMissing ||
		!strings.Contains(st.Quarantine[0].Error, "missing data file") || !slices.Equal(st.Quarantined, []string{gone.Path}) {
		t.Fatalf("quarantine %+v (%v): want %s, missing", st.Quarantine, st.Quarantined, gone.Path)
	}
	if !strings.Contains(metricsText(t, ld.base), `compactord_quarantined_files{table="t"} 1`) {
		t.Errorf("the metrics do not count the quarantined file")
	}
	if _, page := get(t, ld.base+"/tables/t"); !strings.Contains(page, gone.Path) || !strings.Contains(page, `<span class="quarantine-reason">missing</span>`) {
		t.Errorf("the table page does not show the missing file with its reason")
	}

	// The rest of the table is one file; the missing one is still named.
	after := tabletest.WantTheRestInOneFile(t, tbl, gone.Path, tabletest.IDRange(0, 60), goneIDs)
	raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(runner.QuarantineKey)))
	if err != nil {
		t.Fatal(err)
	}
	var stored struct {
		Files []struct{ Key, Path, Reason string } `json:"files"`
	}
	if err := json.Unmarshal(raw, &stored); err != nil || len(stored.Files) != 1 || stored.Files[0].Path != gone.Path || stored.Files[0].Reason != "missing" {
		t.Fatalf("%s: %s (%v)", runner.QuarantineKey, raw, err)
	}
	ld.stop(t)

	// New small files arrive while the daemon is down.
	v := after.Version + 1
	tabletest.PutCommit(t, tbl, v, []string{
		tabletest.AddLine(t, tabletest.WriteDataFile(t, tbl, tabletest.IDRange(60, 10))),
		tabletest.AddLine(t, tabletest.WriteDataFile(t, tbl, tabletest.IDRange(70, 10))),
	})

	ld = startLoggedDaemon(t, pdir)
	st = *tableStatus(getStatus(t, ld.base), "t")
	if len(st.Quarantine) != 1 || st.Quarantine[0].Path != gone.Path || st.Quarantine[0].Reason != scheduler.QuarantineMissing {
		t.Fatalf("after the restart, quarantine %+v: want %s, missing", st.Quarantine, gone.Path)
	}
	if b := st.Backlog; b == nil || b.QuarantinedFiles != 1 || b.QuarantinedBytes != gone.Size || b.SmallFiles != 3 || b.MergeableFiles != 3 {
		t.Fatalf("after the restart, backlog %+v: want the 3 small files but the quarantined one, which is counted apart", st.Backlog)
	}
	st = ld.runUntil(t, "t", 1, func(st scheduler.TableStatus) bool {
		return st.Counters.Runs[scheduler.ResultCommitted] > 0
	})
	if st.Counters.Runs[scheduler.ResultRetry] != 0 || st.Counters.Runs[scheduler.ResultQuarantine] != 0 {
		t.Errorf("runs after the restart %v: the missing file was met again", st.Counters.Runs)
	}
	if logs := ld.logs.dump(); strings.Contains(logs, "missing data file") || strings.Contains(logs, "no such file") {
		t.Errorf("the restarted daemon tried the missing file again:\n%s", logs)
	}
	final, err := delta.LoadSnapshot(t.Context(), tbl, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(final.Files) != 2 {
		t.Errorf("after the run of the restarted daemon: %d files, want the missing one and one output", len(final.Files))
	}
}

// Issue 30 item 5: ten healthy tables and one whose log names a data file
// the store does not hold, under one daemon left to itself (its polls,
// triggers and retry backoff; no POST). The healthy tables compact; the
// poisoned one retries until its retry budget (scheduler.DefaultMissingRuns
// runs) is spent, then quarantines the file (named with its reason,
// counted, in /status and the metrics) and compacts its other files. A
// restarted daemon keeps the quarantine in force: it shows it before any
// run, and its runs compact the table's new files without meeting the
// missing file again (no retry, no quarantine run, no "missing" log line).
func TestTenHealthyTablesAndOneWithAMissingFileQuarantinedAcrossARestart(t *testing.T) {
	root, pdir := t.TempDir(), t.TempDir()
	writePolicy(t, pdir, "d.hcl", fastBackoff)
	healthy := map[string]*delta.Table{}
	for i := range 10 {
		name := fmt.Sprintf("ok%d", i)
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		healthy[name] = tabletest.NewTable(t, "file://"+dir, tabletest.IDRange(0, 10), tabletest.IDRange(10, 10),
			tabletest.IDRange(20, 10), tabletest.IDRange(30, 10), tabletest.IDRange(40, 10))
		writePolicy(t, pdir, name+".hcl", policyHCL(name, "file://"+dir, ""))
	}
	badDir := filepath.Join(root, "bad")
	if err := os.MkdirAll(badDir, 0o755); err != nil {
		t.Fatal(err)
	}
	bad := tabletest.NewTable(t, "file://"+badDir, tabletest.IDRange(0, 10), tabletest.IDRange(10, 10), tabletest.IDRange(20, 10),
		tabletest.IDRange(30, 10), tabletest.IDRange(40, 10), tabletest.IDRange(50, 10))
	gone := tabletest.Latest(t, bad).Files[3]
	if err := os.Remove(filepath.Join(badDir, filepath.FromSlash(gone.Path))); err != nil {
		t.Fatal(err)
	}
	writePolicy(t, pdir, "bad.hcl", policyHCL("bad", "file://"+badDir, ""))

	ld := startRealDaemon(t, pdir, 200*time.Millisecond)
	wait(t, "every table compacted", 120*time.Second, ld.logs, func() bool {
		p := getStatus(t, ld.base)
		for name := range healthy {
			if st := tableStatus(p, name); st == nil || st.Counters.Runs[scheduler.ResultCommitted] == 0 {
				return false
			}
		}
		st := tableStatus(p, "bad")
		return st != nil && st.Counters.Runs[scheduler.ResultCommitted] > 0
	})
	p := getStatus(t, ld.base)
	for name, tbl := range healthy {
		if st := tableStatus(p, name); len(st.Quarantine) != 0 || st.Halted || len(tabletest.Latest(t, tbl).Files) != 1 {
			t.Errorf("healthy table %s: %+v", name, st)
		}
	}
	st := tableStatus(p, "bad")
	if st.Halted || st.Counters.Runs[scheduler.ResultRetry] != scheduler.DefaultMissingRuns-1 || st.Counters.Runs[scheduler.ResultQuarantine] != 1 {
		t.Errorf("bad: runs %v, halted %v: want %d retries, then the run that quarantines", st.Counters.Runs, st.Halted, scheduler.DefaultMissingRuns-1)
	}
	if len(st.Quarantine) != 1 || st.Quarantine[0].Path != gone.Path || st.Quarantine[0].Reason != scheduler.QuarantineMissing {
		t.Fatalf("bad quarantine %+v: want %s, missing", st.Quarantine, gone.Path)
	}
	if !strings.Contains(metricsText(t, ld.base), `compactord_quarantined_files{table="bad"} 1`) {
		t.Errorf("the metrics do not count the quarantined file")
	}
	after := tabletest.Latest(t, bad)
	if len(after.Files) != 2 {
		t.Fatalf("bad has %d files after the quarantine, want the missing one and one output", len(after.Files))
	}
	ld.stop(t)

	// While the daemon is down, new small files arrive in the poisoned table.
	v := after.Version + 1
	tabletest.PutCommit(t, bad, v, []string{
		tabletest.AddLine(t, tabletest.WriteDataFile(t, bad, tabletest.IDRange(60, 10))),
		tabletest.AddLine(t, tabletest.WriteDataFile(t, bad, tabletest.IDRange(70, 10))),
		tabletest.AddLine(t, tabletest.WriteDataFile(t, bad, tabletest.IDRange(80, 10))),
	})

	ld = startRealDaemon(t, pdir, 200*time.Millisecond)
	wait(t, "the restarted daemon compacts the new files", 120*time.Second, ld.logs, func() bool {
		st = tableStatus(getStatus(t, ld.base), "bad")
		return st != nil && st.Counters.Runs[scheduler.ResultCommitted] > 0
	})
	if len(st.Quarantine) != 1 || st.Quarantine[0].Path != gone.Path || st.Quarantine[0].Reason != scheduler.QuarantineMissing {
		t.Fatalf("after the restart, quarantine %+v: want %s, missing", st.Quarantine, gone.Path)
	}
	if st.Counters.Runs[scheduler.ResultRetry] != 0 || st.Counters.Runs[scheduler.ResultQuarantine] != 0 {
		t.Errorf("runs after the restart %v: the missing file was met again", st.Counters.Runs)
	}
	if logs := ld.logs.dump(); strings.Contains(logs, "missing data file") || strings.Contains(logs, "no such file") {
		t.Errorf("the restarted daemon tried the missing file again:\n%s", logs)
	}
	if !strings.Contains(metricsText(t, ld.base), `compactord_quarantined_files{table="bad"} 1`) {
		t.Errorf("after the restart the metrics do not count the quarantined file")
	}
	if final := tabletest.Latest(t, bad); len(final.Files) != 2 {
		t.Errorf("after the restarted daemon's run: %d files, want the missing one and one output", len(final.Files))
	}
}
