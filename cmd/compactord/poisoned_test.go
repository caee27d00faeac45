package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/scheduler"
)

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
