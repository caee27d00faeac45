package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

// Partial progress, for real: `compactord compact --commit-every-jobs 2`
// over six one-job partitions is SIGKILLed once its first batch is
// committed, while its second batch waits for its put (its outputs
// written, uncommitted). The first batch stays committed (its outputs live,
// its sources removed), the table reads exactly its rows, and the killed
// run's other outputs are objects no commit names, until the next plain
// run: it finds the killed run's intent record dead (not rewritten within
// the staleness window, shortened here), deletes every object it recorded
// that no commit references, and compacts the rest, leaving nothing
// unreferenced without a vacuum.
func TestAKilledBatchedCompactionKeepsItsCommittedBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	tbl, all := tabletest.NewDayPairsTable(t, 6)
	before := tabletest.StoreObjects(t, tbl)

	hooks := t.TempDir()
	cmd := exec.Command(bin, "compact", tbl.URL, "--strategy", "binpack", "--commit-every-jobs", "2")
	cmd.Env = append(os.Environ(), testPauseCommitEnv+"=2:"+hooks)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	pid := filepath.Join(hooks, "commit-2.pid")
	deadline := time.After(2 * time.Minute)
	for paused := false; !paused; {
		select {
		case err := <-exited:
			t.Fatalf("the run ended (%v) before its second commit:\n%s", err, out.String())
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("the run never reached its second commit:\n%s", out.String())
		case <-time.After(10 * time.Millisecond):
			_, err := os.Stat(pid)
			paused = err == nil
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited

	// Batch 1 is version 1, and nothing after it.
	snap := tabletest.Latest(t, tbl)
	if snap.Version != 1 {
		t.Fatalf("latest version %d after the kill, want 1 (batch 1 only)", snap.Version)
	}
	var removed, added []string
	for _, a := range tabletest.Committed(t, tbl, 1) {
		switch {
		case a.Remove != nil:
			removed = append(removed, a.Remove.Path)
		case a.Add != nil:
			added = append(added, a.Add.Path)
		}
	}
	live := map[string]bool{}
	for _, f := range snap.Files {
		live[f.Path] = true
	}
	if len(removed) != 4 || len(added) != 2 || len(snap.Files) != 12-4+2 {
		t.Fatalf("batch 1 removes %d and adds %d files, %d live: want 4, 2 and 10", len(removed), len(added), len(snap.Files))
	}
	for _, p := range added {
		if !live[p] {
			t.Errorf("batch 1's output %s is not live", p)
		}
	}
	for _, p := range removed {
		if live[p] {
			t.Errorf("batch 1's source %s is still live", p)
		}
	}
	tabletest.WantIDs(t, tbl, all)
	// The killed run left outputs no commit names (at least batch 2's).
	orphans := unreferenced(t, tbl, before)
	if len(orphans) < 2 {
		t.Fatalf("%d objects no commit names after the kill (%v); want batch 2's outputs at least", len(orphans), orphans)
	}
	t.Logf("killed with batch 1 committed; %d uncommitted objects left: %v", len(orphans), orphans)

	// The next plain run sweeps the killed run's intent record (dead: the
	// staleness window is shortened from 1h) and deletes its uncommitted
	// outputs, keeps batch 1's, and compacts the rest: no vacuum needed.
	next := exec.Command(bin, "compact", tbl.URL, "--strategy", "binpack", "--commit-every-jobs", "2",
		"--attempt-stale-after", "1ms", "--log-level", "info")
	var logs bytes.Buffer
	next.Stderr = &logs
	printed, err := next.Output()
	if err != nil {
		t.Fatalf("next run: %v\n%s%s", err, printed, logs.String())
	}
	if !strings.Contains(logs.String(), "swept a dead attempt") {
		t.Errorf("the next run did not log the sweep of the dead attempt:\n%s", logs.String())
	}
	data := 0 // the orphans but the intent record itself
	for _, k := range orphans {
		if !strings.HasPrefix(k, "_compactord/") {
			data++
		}
	}
	if want := fmt.Sprintf("swept 1 dead attempts: %d uncommitted objects deleted", data); !strings.Contains(string(printed), want) {
		t.Errorf("the next run's output does not say %q:\n%s", want, printed)
	}
	snap = tabletest.Latest(t, tbl)
	if len(snap.Files) != 6 {
		t.Fatalf("%d live files after the next run, want one per partition", len(snap.Files))
	}
	for _, p := range added {
		if !live[p] || !liveKey(t, snap, p) {
			t.Errorf("batch 1's output %s is not live after the next run", p)
		}
	}
	after := tabletest.StoreObjects(t, tbl)
	for _, k := range orphans {
		if after[k] {
			t.Errorf("the killed run's uncommitted object %s survived the next run", k)
		}
	}
	if left := unreferenced(t, tbl, before); len(left) > 0 {
		t.Errorf("objects no commit names after the next run: %v", left)
	}
	for k := range after {
		if strings.HasPrefix(k, "_compactord/attempts/") {
			t.Errorf("intent record %s left after the next run", k)
		}
	}
	tabletest.WantIDs(t, tbl, all)
}

// unreferenced lists the objects not in before that no commit names.
func unreferenced(t *testing.T, tbl *delta.Table, before map[string]bool) []string {
	t.Helper()
	ref := tabletest.LogReferenced(t, tbl)
	var out []string
	for k := range tabletest.StoreObjects(t, tbl) {
		if !before[k] && !ref[k] {
			out = append(out, k)
		}
	}
	return out
}

// liveKey reports whether key is a live file of snap.
func liveKey(t *testing.T, snap *delta.Snapshot, key string) bool {
	t.Helper()
	for _, f := range snap.Files {
		k, err := f.Key()
		if err != nil {
			t.Fatal(err)
		}
		if k == key {
			return true
		}
	}
	return false
}

// The commit flags of compact reach the run, the JSON result lists the
// batches, and bad values are usage errors.
func TestCompactCommitsInBatchesWithTheFlags(t *testing.T) {
	ctx := context.Background()
	tbl, all := tabletest.NewDayPairsTable(t, 5)
	var stdout, stderr bytes.Buffer
	code := mainExit(ctx, []string{"compact", tbl.URL, "--strategy", "binpack", "--commit-every-jobs", "2", "--commit-interval", "1h", "--json"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	var out struct {
		Status            string  `json:"status"`
		Commits           int     `json:"commits"`
		CommittedVersions []int64 `json:"committedVersions"`
		JobsCommitted     int     `json:"jobsCommitted"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("%v in %s", err, stdout.String())
	}
	if out.Status != "committed" || out.Commits != 3 || !slices.Equal(out.CommittedVersions, []int64{1, 2, 3}) || out.JobsCommitted != 5 {
		t.Fatalf("result %+v, want 5 jobs in 3 commits (2, 2, 1)", out)
	}
	tabletest.WantIDs(t, tbl, all)
	for _, args := range [][]string{{"--commit-every-jobs", "-1"}, {"--commit-interval", "soon"}} {
		stderr.Reset()
		if code := mainExit(ctx, append([]string{"compact", tbl.URL}, args...), io.Discard, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage); stderr:\n%s", args, code, stderr.String())
		}
	}
}
