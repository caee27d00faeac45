package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
)

// testPauseEnv is a test-only hook of run-unit: "INDEX:DIR" makes the first
// attempt of unit INDEX write its pid to DIR/unit-INDEX.pid once its
// outputs are written and then wait, before its result manifest, until it
// is killed (the acceptance test SIGKILLs it there). A later attempt finds
// the file and goes on. Nothing else reads it.
const testPauseEnv = "COMPACTORD_TEST_PAUSE_BEFORE_MANIFEST"

// testPause is the BeforeManifest hook of testPauseEnv.
func testPause(hook string, index int) func(context.Context) error {
	at, dir, ok := strings.Cut(hook, ":")
	if !ok || at != strconv.Itoa(index) {
		return nil
	}
	return func(ctx context.Context) error {
		return pauseUntilKilled(ctx, filepath.Join(dir, "unit-"+at+".pid"))
	}
}

// testPauseCommitEnv is a test-only hook of compact and run-plan: "N:DIR"
// makes the run's N-th commit attempt (1-based; with commit_every_jobs,
// batch N when no race is lost) write the process's pid to
// DIR/commit-N.pid and wait there, before its put, until it is killed: the
// partial-progress test SIGKILLs it with N-1 batches committed. Nothing
// else reads it.
const testPauseCommitEnv = "COMPACTORD_TEST_PAUSE_BEFORE_COMMIT"

// testPauseCommit is the commit BeforePut hook of testPauseCommitEnv (nil
// when hook is empty or malformed).
func testPauseCommit(hook string) func(context.Context, int64) error {
	at, dir, ok := strings.Cut(hook, ":")
	n, err := strconv.Atoi(at)
	if !ok || err != nil || n < 1 {
		return nil
	}
	var calls atomic.Int64
	return func(ctx context.Context, _ int64) error {
		if calls.Add(1) != int64(n) {
			return nil
		}
		return pauseUntilKilled(ctx, filepath.Join(dir, "commit-"+at+".pid"))
	}
}

// pauseUntilKilled writes the process's pid to path and waits until ctx
// ends; when path exists already (a later attempt) it returns at once.
func pauseUntilKilled(ctx context.Context, path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(f, os.Getpid())
	if err := errors.Join(err, f.Close()); err != nil {
		return err
	}
	<-ctx.Done()
	return ctx.Err()
}
