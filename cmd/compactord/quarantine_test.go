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
	after := tabletest.Latest(t, tbl)
	var others []int64
	for _, a := range after.Files {
		if a.Path != gone.Path {
			others = append(others, tabletest.FileIDs(t, tbl, a)...)
		}
	}
	slices.Sort(others)
	var want []int64
	for id := int64(0); id < 60; id++ {
		if !slices.Contains(goneIDs, id) {
			want = append(want, id)
		}
	}
	if len(after.Files) != 2 || !slices.Equal(others, want) {
		t.Fatalf("after the quarantine: %d files holding %v, want the missing one and one holding %v", len(after.Files), others, want)
	}
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
