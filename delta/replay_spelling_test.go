package delta_test

import (
	"context"
	"slices"
	"testing"

	"github.com/compactord/compactord/delta"
	deltaactions "github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/checkpointwrite"
	"github.com/compactord/compactord/internal/testutil/logtest"
)

// A remove that spells its file otherwise than the add (absolute instead
// of relative, another percent-encoding, a dot segment) removes it, as
// Spark's replay, which qualifies every path before matching, reads the
// log: a raw string match would keep the files live and a compaction would
// write their rows back. It holds for commits over commits, over a
// checkpoint, and for a snapshot advanced commit by commit.
func TestARemoveSpelledOtherwiseRemovesItsFile(t *testing.T) {
	ctx := context.Background()
	for _, viaCheckpoint := range []bool{false, true} {
		dir := t.TempDir()
		tbl := logtest.Create(t, dir, logtest.Spec{})
		a := logtest.AddFile("part-1.parquet", "", 10)
		b := logtest.AddFile("day%3D1/part-2.parquet", "", 10)
		c := logtest.AddFile("file://"+dir+"/part-3.parquet", "", 10)
		d := logtest.AddFile("part-4.parquet", "", 10)
		logtest.Commit(t, tbl, 1, deltaactions.Action{Add: a}, deltaactions.Action{Add: b}, deltaactions.Action{Add: c}, deltaactions.Action{Add: d})
		if viaCheckpoint {
			snap, err := delta.LoadSnapshot(ctx, tbl, 1)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := checkpointwrite.WriteCheckpoint(ctx, tbl, snap, checkpointwrite.CheckpointOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		before, err := delta.LoadSnapshot(ctx, tbl, 1)
		if err != nil {
			t.Fatal(err)
		}
		rm := func(a *deltaactions.Add, spelled string) deltaactions.Action {
			r := logtest.RemoveFile(a, 1_600_000_000_500)
			r.Path = spelled
			return deltaactions.Action{Remove: r}
		}
		logtest.Commit(t, tbl, 2,
			rm(a, "file://"+dir+"/part-1.parquet"),
			rm(b, "day=1/part-2.parquet"),
			rm(c, "part-3.parquet"),
			rm(d, "./part%2D4.parquet"))
		loaded, err := delta.LoadSnapshot(ctx, tbl, -1)
		if err != nil {
			t.Fatal(err)
		}
		advanced, ok, err := delta.Advance(ctx, tbl, before, 10)
		if err != nil || !ok {
			t.Fatalf("advance: ok=%v err=%v", ok, err)
		}
		for name, snap := range map[string]*delta.Snapshot{"loaded": loaded, "advanced": advanced} {
			var live []string
			for _, f := range snap.Files {
				live = append(live, f.Path)
			}
			if len(live) != 0 {
				t.Errorf("checkpoint=%v, %s snapshot v%d: live %q, want none (every file removed)", viaCheckpoint, name, snap.Version, live)
			}
			if len(snap.Tombstones) != 4 {
				t.Errorf("checkpoint=%v, %s snapshot: %d tombstones, want 4", viaCheckpoint, name, len(snap.Tombstones))
			}
		}
		// An add spelled otherwise after its remove is the file again, once.
		logtest.Commit(t, tbl, 3, deltaactions.Action{Add: logtest.AddFile("part%2D1.parquet", "", 10)})
		again, err := delta.LoadSnapshot(ctx, tbl, -1)
		if err != nil {
			t.Fatal(err)
		}
		var live []string
		for _, f := range again.Files {
			live = append(live, f.Path)
		}
		if !slices.Equal(live, []string{"part%2D1.parquet"}) || len(again.Tombstones) != 3 {
			t.Errorf("checkpoint=%v: after the re-add live %q with %d tombstones, want [part%%2D1.parquet] and 3", viaCheckpoint, live, len(again.Tombstones))
		}
	}
}
