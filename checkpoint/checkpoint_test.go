package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/logtest"
)

func grown(t *testing.T, spec logtest.Spec, latest int64) (*delta.Table, string) {
	t.Helper()
	dir := t.TempDir()
	tbl := logtest.Create(t, dir, spec)
	logtest.Grow(t, tbl, 1, latest, spec.Partitioned)
	return tbl, dir
}

func exists(t *testing.T, dir, key string) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(key)))
	return err == nil
}

func TestAfterCommitFollowsTheModuloRule(t *testing.T) {
	ctx := context.Background()
	tbl, dir := grown(t, logtest.Spec{Configuration: map[string]string{"delta.checkpointInterval": "5"}}, 12)
	for _, tc := range []struct {
		version int64
		write   bool
	}{{0, false}, {3, false}, {5, true}, {10, true}, {12, false}} {
		res, err := AfterCommit(ctx, tbl, tc.version, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if (res.Checkpoint != nil) != tc.write || exists(t, dir, delta.CheckpointKey(tc.version)) != tc.write {
			t.Errorf("version %d: written=%v (%s), want %v", tc.version, res.Checkpoint != nil, res.Skipped, tc.write)
		}
	}
	// Again at 10: it exists, nothing is rewritten.
	res, err := AfterCommit(ctx, tbl, 10, Options{})
	if err != nil || res.Checkpoint != nil || !strings.Contains(res.Skipped, "already has a checkpoint") {
		t.Fatalf("second checkpoint of 10: %v %+v", err, res)
	}
	if v, err := delta.LastCheckpointVersion(ctx, tbl); err != nil || v != 10 {
		t.Fatalf("_last_checkpoint = %d, %v", v, err)
	}
}

func TestCatchUpWritesTheNewestMultipleOfTheInterval(t *testing.T) {
	ctx := context.Background()
	tbl, dir := grown(t, logtest.Spec{}, 45)
	res, err := CatchUp(ctx, tbl, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Checkpoint == nil || res.Checkpoint.Version != 40 || !exists(t, dir, delta.CheckpointKey(40)) {
		t.Fatalf("catch-up wrote %+v (%s), want version 40", res.Checkpoint, res.Skipped)
	}
	for _, v := range []int64{10, 20, 30, 45} {
		if exists(t, dir, delta.CheckpointKey(v)) {
			t.Errorf("checkpoint %d written", v)
		}
	}
	// Five commits behind is within the interval.
	res, err = CatchUp(ctx, tbl, Options{})
	if err != nil || res.Checkpoint != nil {
		t.Fatalf("second catch-up: %v %+v", err, res)
	}
	// A tighter threshold still never writes at last+N: 45 is no multiple.
	res, err = CatchUp(ctx, tbl, Options{MaxBehind: 2})
	if err != nil || res.Checkpoint != nil || !strings.Contains(res.Skipped, "no multiple") {
		t.Fatalf("catch-up with MaxBehind 2: %v %+v", err, res)
	}
	logtest.Grow(t, tbl, 46, 52, false)
	res, err = CatchUp(ctx, tbl, Options{MaxBehind: 2})
	if err != nil || res.Checkpoint == nil || res.Checkpoint.Version != 50 {
		t.Fatalf("catch-up at 52: %v %+v", err, res)
	}
	snap, err := delta.LoadSnapshot(ctx, tbl, -1)
	if err != nil || snap.Version != 52 {
		t.Fatal(err)
	}
}

func TestWriteSkipsACheckpointedVersionAndRefusesUnknownFeatures(t *testing.T) {
	ctx := context.Background()
	tbl, _ := grown(t, logtest.Spec{}, 7)
	res, err := Write(ctx, tbl, -1, Options{})
	if err != nil || res.Checkpoint == nil || res.Checkpoint.Version != 7 {
		t.Fatalf("write: %v %+v", err, res)
	}
	res, err = Write(ctx, tbl, 7, Options{})
	if err != nil || res.Checkpoint != nil {
		t.Fatalf("rewrite: %v %+v", err, res)
	}
	bad, _ := grown(t, logtest.Spec{Protocol: &delta.Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"someFutureFeature"}}}, 2)
	if _, err := Write(ctx, bad, -1, Options{}); err == nil || !strings.Contains(err.Error(), "someFutureFeature") {
		t.Fatalf("unknown writer feature: %v", err)
	}
}
