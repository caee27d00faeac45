package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/checkpointwrite"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/testutil/logtest"
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
		if (res.Checkpoint != nil) != tc.write || exists(t, dir, logpath.CheckpointKey(tc.version)) != tc.write {
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
	if res.Checkpoint == nil || res.Checkpoint.Version != 40 || !exists(t, dir, logpath.CheckpointKey(40)) {
		t.Fatalf("catch-up wrote %+v (%s), want version 40", res.Checkpoint, res.Skipped)
	}
	for _, v := range []int64{10, 20, 30, 45} {
		if exists(t, dir, logpath.CheckpointKey(v)) {
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
	bad, _ := grown(t, logtest.Spec{Protocol: &actions.Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"someFutureFeature"}}}, 2)
	if _, err := Write(ctx, bad, -1, Options{}); err == nil || !strings.Contains(err.Error(), "someFutureFeature") {
		t.Fatalf("unknown writer feature: %v", err)
	}
}

func TestMaintainCheckpointsOurCommitsOnMultiplesAndRetriesMissedOnes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl := logtest.Create(t, dir, logtest.Spec{Configuration: map[string]string{"delta.checkpointInterval": "5"}})
	// Ours at 5, 10 and 15 (as if their checkpoints had failed), others
	// elsewhere; up to 17.
	for v := int64(1); v <= 17; v++ {
		engine := "spark/3.5"
		if v%5 == 0 {
			engine = "compactord/0.1.0"
		}
		logtest.CommitAs(t, tbl, v, engine, actions.Action{Add: logtest.AddFile(fmt.Sprintf("f%d.parquet", v), "", v)})
	}
	res, err := Maintain(ctx, tbl, MaintainOptions{Engine: "compactord", NoCatchUp: true})
	if err != nil || len(res.Failed) != 0 {
		t.Fatal(err, res.Failed)
	}
	var got []int64
	for _, c := range res.Written {
		got = append(got, c.Version)
	}
	if fmt.Sprint(got) != "[5 10 15]" {
		t.Fatalf("checkpoints %v, want [5 10 15]", got)
	}
	if v, _ := delta.LastCheckpointVersion(ctx, tbl); v != 15 {
		t.Fatalf("_last_checkpoint at %d", v)
	}
	// Someone else's commit on 20; nothing of ours above 15: catch-up
	// only once the threshold is passed.
	for v := int64(18); v <= 21; v++ {
		logtest.CommitAs(t, tbl, v, "spark/3.5", actions.Action{Add: logtest.AddFile(fmt.Sprintf("f%d.parquet", v), "", v)})
	}
	res, err = Maintain(ctx, tbl, MaintainOptions{Engine: "compactord"})
	if err != nil || len(res.Written) != 1 || res.Written[0].Version != 20 {
		t.Fatalf("catch-up: %v %+v", err, res)
	}
	if exists(t, dir, logpath.CheckpointKey(21)) {
		t.Fatal("checkpoint at 21")
	}
}

func TestOpCountsAFailedCheckpointAndDoesNotFail(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl := logtest.Create(t, dir, logtest.Spec{
		Protocol: &actions.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"v2Checkpoint"},
			WriterFeatures: []string{"v2Checkpoint", "appendOnly", "invariants"}},
		Configuration: map[string]string{"delta.checkpointInterval": "2", "delta.checkpointPolicy": "v2"}})
	logtest.CommitAs(t, tbl, 1, "compactord", actions.Action{Add: logtest.AddFile("a.parquet", "", 1)})
	logtest.CommitAs(t, tbl, 2, "compactord", actions.Action{Add: logtest.AddFile("b.parquet", "", 2)})
	// A file where the sidecar directory goes makes the write fail.
	side := filepath.Join(dir, "_delta_log", "_sidecars")
	if err := os.WriteFile(side, []byte("in the way"), 0o644); err != nil {
		t.Fatal(err)
	}
	op := &Op{Options: MaintainOptions{Engine: "compactord", NoCatchUp: true}}
	res, err := op.Run(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts[CountFailed] != 1 || res.Counts[CountWritten] != 0 {
		t.Fatalf("counts %v", res.Counts)
	}
	if err := os.Remove(side); err != nil {
		t.Fatal(err)
	}
	res, err = op.Run(ctx, tbl)
	if err != nil || res.Counts[CountWritten] != 1 || res.Counts[CountFailed] != 0 {
		t.Fatalf("retry: %v %v", err, res.Counts)
	}
	// No commit, but work done: the run says which checkpoint it wrote.
	if res.Committed || len(res.Done) != 1 || !strings.HasPrefix(res.Done[0], "checkpoint of version 2 written (") {
		t.Fatalf("retry: committed %v, done %q; want the checkpoint of version 2 named", res.Committed, res.Done)
	}
	if v, _ := delta.LastCheckpointVersion(ctx, tbl); v != 2 {
		t.Fatalf("_last_checkpoint at %d", v)
	}
}

// A checkpoint whose _last_checkpoint write failed leaves the hint on the
// checkpoint before; the next pass of the daemon's operation rewrites it,
// even with nothing left to checkpoint, and counts it once.
func TestOpRepairsALastCheckpointLeftBehindItsCheckpoint(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl := logtest.Create(t, dir, logtest.Spec{Configuration: map[string]string{"delta.checkpointInterval": "2"}})
	for v := int64(1); v <= 4; v++ {
		logtest.CommitAs(t, tbl, v, "compactord/0.1.0", actions.Action{Add: logtest.AddFile(fmt.Sprintf("f%d.parquet", v), "", v)})
		if v == 2 {
			if _, err := Write(ctx, tbl, 2, Options{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Checkpoint 4 lands; its _last_checkpoint write does not.
	res, err := Write(ctx, tbl, 4, Options{Delta: checkpointwrite.CheckpointOptions{SkipLastCheckpoint: true}})
	if err != nil || res.Checkpoint == nil {
		t.Fatalf("write 4: %v %+v", err, res)
	}
	if v, _ := delta.LastCheckpointVersion(ctx, tbl); v != 2 {
		t.Fatalf("_last_checkpoint at %d before the run, want 2", v)
	}
	op := &Op{Options: MaintainOptions{Engine: "compactord", NoCatchUp: true}}
	out, err := op.Run(ctx, tbl)
	if err != nil || out.Counts[CountHintRepaired] != 1 || out.Counts[CountWritten] != 0 || out.Counts[CountFailed] != 0 {
		t.Fatalf("run: %v %v", err, out.Counts)
	}
	if want := "_last_checkpoint repaired to name version 4"; len(out.Done) != 1 || out.Done[0] != want {
		t.Fatalf("run: done %q, want %q", out.Done, want)
	}
	if v, err := delta.LastCheckpointVersion(ctx, tbl); err != nil || v != 4 {
		t.Fatalf("_last_checkpoint at %d after the run, want 4 (%v)", v, err)
	}
	// Current now: the next run has nothing to repair.
	if out, err = op.Run(ctx, tbl); err != nil || out.Counts[CountHintRepaired] != 0 || len(out.Done) != 0 {
		t.Fatalf("second run: %v %v %q", err, out.Counts, out.Done)
	}
	// Missing altogether: repaired too.
	if err := os.Remove(filepath.Join(dir, "_delta_log", "_last_checkpoint")); err != nil {
		t.Fatal(err)
	}
	if out, err = op.Run(ctx, tbl); err != nil || out.Counts[CountHintRepaired] != 1 {
		t.Fatalf("run without _last_checkpoint: %v %v", err, out.Counts)
	}
	if v, _ := delta.LastCheckpointVersion(ctx, tbl); v != 4 {
		t.Fatalf("_last_checkpoint at %d, want 4", v)
	}
}
