package storetest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/internal/testutil/stores"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/internal/testutil"
)

// Env vars of the crash child process.
const (
	envCrashURL    = "COMPACTORD_STORETEST_CRASH_URL"
	envCrashMarker = "COMPACTORD_STORETEST_CRASH_MARKER"
)

// CrashChild is the body of the helper test a test binary must define for
// HardCrash:
//
//	func TestHelperCrashChild(t *testing.T) { storetest.CrashChild(t) }
//
// Outside a crash run it returns at once. Inside one it compacts the table
// and, with the outputs written and the commit about to be put, signals
// the parent and waits to be killed.
func CrashChild(t *testing.T) {
	url := os.Getenv(envCrashURL)
	if url == "" {
		return
	}
	tbl := stores.Open(t, url)
	opts := runOptions()
	opts.Commit.BeforePut = func(ctx context.Context, version int64) error {
		return atCrashPoint() // the parent kills us here
	}
	_, err := compaction.Compact(context.Background(), tbl, opts)
	t.Fatalf("crash child was not killed before its commit (err %v)", err)
}

// KillAtMarker re-executes the test binary running only the test named
// child, with env added and a marker file's path in
// COMPACTORD_STORETEST_CRASH_MARKER; once the child has created the marker
// (it is at its crash point and waiting) the child is killed with SIGKILL.
// It fails the test when the child exits first or never gets there.
func KillAtMarker(t *testing.T, child string, env ...string) {
	t.Helper()
	marker := filepath.Join(t.TempDir(), "marker")
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), env...), envCrashMarker+"="+marker)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(2 * time.Minute)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("crash child exited before its crash point (%v):\n%s", err, out)
		case <-deadline:
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("crash child never reached its crash point:\n%s", out)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	<-done
}

// atCrashPoint creates the crash marker and sleeps until the parent kills
// the process (see KillAtMarker).
func atCrashPoint() error {
	if err := os.WriteFile(os.Getenv(envCrashMarker), []byte("at the crash point\n"), 0o644); err != nil {
		return err
	}
	time.Sleep(time.Hour)
	return nil
}

// HardCrash kills (SIGKILL) a compaction process between writing its
// outputs and committing them, then checks that the table is still valid
// with the same version and rows, that the outputs are unreferenced
// orphans, and that the next compaction succeeds with the rows unchanged.
// The test binary must define TestHelperCrashChild (see CrashChild).
func HardCrash(t *testing.T, url string) {
	if strings.HasPrefix(url, "mem://") {
		t.Skip("a killed process takes a mem:// table with it")
	}
	tbl := stores.Open(t, url)
	stores.CopyTable(t, testutil.DeltaTable(t, compactionTable), tbl)
	before, rowsBefore := stores.LiveRows(t, tbl)
	objectsBefore := stores.DataObjects(t, tbl)

	KillAtMarker(t, "TestHelperCrashChild", envCrashURL+"="+url)

	after, rowsAfter := stores.LiveRows(t, tbl)
	if after.Version != before.Version {
		t.Fatalf("killed compaction moved %s from v%d to v%d", url, before.Version, after.Version)
	}
	if lost, extra := rowsAfter.Diff(rowsBefore); len(lost)+len(extra) > 0 {
		t.Fatalf("killed compaction changed rows: lost %v, extra %v", lost, extra)
	}
	orphans := len(stores.DataObjects(t, tbl)) - len(objectsBefore)
	if orphans <= 0 {
		t.Fatalf("the child died before writing outputs (%d new objects): the crash point was not reached", orphans)
	}

	res, err := compaction.Compact(context.Background(), tbl, runOptions())
	if err != nil {
		t.Fatalf("compaction after the crash: %v", err)
	}
	_, rowsFinal := stores.LiveRows(t, tbl)
	if lost, extra := rowsFinal.Diff(rowsBefore); len(lost)+len(extra) > 0 {
		t.Fatalf("compaction after the crash changed rows: lost %v, extra %v", lost, extra)
	}
	t.Logf("killed before commit: v%d unchanged, %d rows unchanged, %d orphan outputs left; next compaction committed v%d",
		before.Version, rowsAfter.Total(), orphans, res.CommittedVersion)
}
