package delta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta/internal/deltatest"

	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/delta/logstore"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/testutil"
)

// openLimited opens the local table at dir with read limits.
func openLimited(t testing.TB, dir string, l logstore.ReadLimits) *Table {
	t.Helper()
	tbl, err := OpenTableWith(context.Background(), "file://"+dir, OpenOptions{Limits: l})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.Close() })
	return tbl
}

// commitWithLongLine appends to commit 1 of a copy of dv-small an action
// line of n bytes (a commitInfo with a long field) and returns the root.
func commitWithLongLine(t *testing.T, n int) string {
	t.Helper()
	root := deltatest.CopyTableDir(t, testutil.DeltaTable(t, "dv-small"), nil)
	p := filepath.Join(root, "_delta_log", logName(1))
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	head := `{"commitInfo":{"note":"`
	tail := `"}}`
	line := head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	if !bytes.HasSuffix(data, []byte("\n")) {
		data = append(data, '\n')
	}
	data = append(data, line+"\n"...)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestALogLineOverTheLimitIsACorruptCommitNamingTheLine(t *testing.T) {
	root := commitWithLongLine(t, 4<<10)
	data, _ := os.ReadFile(filepath.Join(root, "_delta_log", logName(1)))
	lines := bytes.Count(data, []byte("\n"))

	_, err := LoadSnapshot(context.Background(), openLimited(t, root, logstore.ReadLimits{LogLine: 1 << 10}), -1)
	var cf *failure.CorruptFileError
	if !errors.As(err, &cf) {
		t.Fatalf("LoadSnapshot = %v, want a *failure.CorruptFileError", err)
	}
	if cf.Kind != failure.Commit || cf.Path != logpath.CommitKey(1) {
		t.Errorf("corrupt object = %s %s, want commit %s", cf.Kind, cf.Path, logpath.CommitKey(1))
	}
	var tl *logstore.TooLargeError
	if !errors.As(err, &tl) || tl.Line != lines || tl.Size != 4<<10 || tl.Field != "LogLine" {
		t.Errorf("error %v: want line %d of %d bytes over LogLine", err, lines, 4<<10)
	}
	for _, w := range []string{logName(1), fmt.Sprintf("line %d", lines), "1 KiB", "ReadLimits.LogLine"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}

	// Under the limit, the same commit loads.
	if _, err := LoadSnapshot(context.Background(), openLimited(t, root, logstore.ReadLimits{LogLine: 8 << 10}), -1); err != nil {
		t.Errorf("LoadSnapshot with a line limit above the line: %v", err)
	}
}

func TestACommitOverTheFileLimitIsRefusedBeforeItIsRead(t *testing.T) {
	// 32 MiB of commit, 1 MiB of limit: reading it would allocate 32 MiB.
	root := commitWithLongLine(t, 32<<20)
	tbl := openLimited(t, root, logstore.ReadLimits{LogFile: 1 << 20})
	var err error
	alloc := deltatest.AllocatedBy(func() { _, err = ReadCommit(context.Background(), tbl, 1) })
	var cf *failure.CorruptFileError
	if !errors.As(err, &cf) || cf.Path != logpath.CommitKey(1) {
		t.Fatalf("ReadCommit = %v, want a *failure.CorruptFileError naming %s", err, logpath.CommitKey(1))
	}
	for _, w := range []string{"1 MiB", "ReadLimits.LogFile"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
	if alloc > 1<<20 {
		t.Errorf("refusing the commit allocated %d bytes, want under the 1 MiB limit", alloc)
	}
}

func TestALastCheckpointOverTheLimitIsIgnoredUnread(t *testing.T) {
	root := deltatest.CopyTableDir(t, testutil.DeltaTable(t, "dv-basic-with-checkpoint"), nil)
	p := filepath.Join(root, "_delta_log", "_last_checkpoint")
	hint, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// A valid document padded with 8 MiB of spaces.
	big := append(bytes.TrimSpace(hint), bytes.Repeat([]byte(" "), 8<<20)...)
	if err := os.WriteFile(p, big, 0o644); err != nil {
		t.Fatal(err)
	}
	tbl := openDir(t, root)
	var lc *logpath.LastCheckpoint
	var reason string
	alloc := deltatest.AllocatedBy(func() { lc, reason, err = readLastCheckpoint(context.Background(), tbl) })
	if err != nil || lc != nil {
		t.Fatalf("readLastCheckpoint = %v, %v; want no hint and no error", lc, err)
	}
	if !strings.Contains(reason, "ReadLimits.LastCheckpoint") {
		t.Errorf("reason %q does not name the limit", reason)
	}
	if alloc > uint64(logstore.DefaultMaxLastCheckpoint) {
		t.Errorf("ignoring the hint allocated %d bytes, want under the 1 MiB limit", alloc)
	}
	snap, err := LoadSnapshot(context.Background(), tbl, -1)
	if err != nil {
		t.Fatalf("LoadSnapshot without the hint: %v", err)
	}
	if snap.Version != 46 {
		t.Errorf("version %d, want 46", snap.Version)
	}
}

func TestParseActionLinesKeepsLineNumbersAcrossBlankAndCRLFLines(t *testing.T) {
	data := []byte("{\"commitInfo\":{}}\r\n\n{\"commitInfo\":{\"a\":1}}\r\n{\"commitInfo\":{\"b\":\"" + strings.Repeat("y", 100) + "\"}}")
	acts, err := parseActionLines(data[:bytes.LastIndexByte(data, '\n')+1], 64)
	if err != nil || len(acts) != 2 {
		t.Fatalf("parseActionLines = %d actions, %v; want 2", len(acts), err)
	}
	_, err = parseActionLines(data, 64)
	var tl *logstore.TooLargeError
	if !errors.As(err, &tl) || tl.Line != 4 {
		t.Errorf("parseActionLines = %v, want line 4 over the limit", err)
	}
}
