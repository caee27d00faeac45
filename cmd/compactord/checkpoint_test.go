package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/compactord/compactord/checkpoint"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/logcleanup"
)

func TestCheckpointAndCleanupLogCommands(t *testing.T) {
	ctx := context.Background()
	dir := testutil.CopyDeltaTable(t, "inserts-deletes-checkpoint") // v13, Spark checkpoint at 10
	run := func(args ...string) []byte {
		t.Helper()
		var out, errb bytes.Buffer
		if code := mainExit(ctx, args, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		return out.Bytes()
	}
	var cp checkpoint.Result
	if err := json.Unmarshal(run("checkpoint", dir, "--json"), &cp); err != nil {
		t.Fatal(err)
	}
	if cp.Checkpoint == nil || cp.Checkpoint.Version != 13 || cp.NewestBefore != 10 {
		t.Fatalf("checkpoint: %+v", cp)
	}
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(logpath.CheckpointKey(13)))); err != nil {
		t.Fatal(err)
	}
	// The copy's files are new: age them as the commits were (2023),
	// keeping version order.
	entries, err := os.ReadDir(filepath.Join(dir, "_delta_log"))
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		ts := time.Date(2023, 6, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(filepath.Join(dir, "_delta_log", e.Name()), ts, ts); err != nil {
			t.Fatal(err)
		}
	}
	var dry logcleanup.Result
	if err := json.Unmarshal(run("cleanup-log", dir, "--dry-run", "--json"), &dry); err != nil {
		t.Fatal(err)
	}
	// Every commit is years old: everything below the new checkpoint goes.
	if dry.Boundary != 13 || len(dry.Deleted) != 13+1+countCRC(t, dir, 13) {
		t.Fatalf("dry run: boundary %d, %d files", dry.Boundary, len(dry.Deleted))
	}
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(logpath.CommitKey(0)))); err != nil {
		t.Fatal("the dry run deleted commit 0")
	}
	out := run("cleanup-log", dir)
	if !bytes.Contains(out, []byte("deleted")) {
		t.Fatalf("cleanup-log printed %q", out)
	}
	tbl, err := delta.OpenTable(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	if s, err := delta.LoadSnapshot(ctx, tbl, -1); err != nil || s.Version != 13 || len(s.Files) != 7 {
		t.Fatalf("latest after cleanup: %v", err)
	}
	if _, err := delta.LoadSnapshot(ctx, tbl, 12); !errors.Is(err, logpath.ErrVersionNotFound) {
		t.Fatalf("version 12 after cleanup: %v", err)
	}
}

func countCRC(t *testing.T, dir string, below int64) int {
	t.Helper()
	l, err := func() (*delta.LogListing, error) {
		tbl, err := delta.OpenTable(context.Background(), dir)
		if err != nil {
			return nil, err
		}
		defer tbl.Close()
		return delta.ListLog(context.Background(), tbl)
	}()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range l.Entries {
		if e.Kind == delta.LogChecksum && e.Version < below {
			n++
		}
	}
	return n
}
