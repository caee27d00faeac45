package checkpointwrite

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/internal/deltatest"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/logtest"
)

// sparkHint is the part of a _last_checkpoint document a repair rebuilds.
type sparkHint struct {
	Version       int64  `json:"version"`
	Size          int64  `json:"size"`
	Parts         *int   `json:"parts"`
	SizeInBytes   *int64 `json:"sizeInBytes"`
	NumOfAddFiles *int64 `json:"numOfAddFiles"`
	V2            *struct {
		Path        string `json:"path"`
		SizeInBytes int64  `json:"sizeInBytes"`
	} `json:"v2Checkpoint"`
}

func readHint(t *testing.T, root string) (sparkHint, []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(logpath.LastCheckpointKey)))
	if err != nil {
		t.Fatal(err)
	}
	var h sparkHint
	if err := json.Unmarshal(data, &h); err != nil {
		t.Fatalf("%v in %s", err, data)
	}
	return h, data
}

// A table whose _last_checkpoint is gone gets back the document Spark
// wrote for its newest checkpoint: version, size, parts, sizeInBytes,
// numOfAddFiles and the V2 checkpoint's file, on every test table whose
// hint names its newest checkpoint with those fields (classic, multi-part,
// V2 under a classic name, UUID-named JSON and parquet).
func TestRepairLastCheckpointRebuildsWhatSparkWrote(t *testing.T) {
	ctx := context.Background()
	tested := 0
	for name := range testutil.ExpectedTables(t) {
		src := testutil.DeltaTable(t, name)
		raw, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(logpath.LastCheckpointKey)))
		if err != nil {
			continue
		}
		var want sparkHint
		if json.Unmarshal(raw, &want) != nil || want.SizeInBytes == nil || want.NumOfAddFiles == nil {
			continue
		}
		t.Run(name, func(t *testing.T) {
			work := deltatest.CopyTableDir(t, src, onlyLog(nil))
			tbl := logtest.Open(t, work)
			l, err := delta.ListLog(ctx, tbl)
			if err != nil {
				t.Fatal(err)
			}
			if l.NewestCheckpoint(1<<62) != want.Version {
				t.Skipf("the hint names %d, the newest checkpoint is %d", want.Version, l.NewestCheckpoint(1<<62))
			}
			// Nothing to repair while the hint is current.
			if rep, err := RepairLastCheckpoint(ctx, tbl, l); err != nil || rep != nil {
				t.Fatalf("repair of a current hint: %+v, %v", rep, err)
			}
			if want.V2 != nil {
				if _, err := os.Stat(filepath.Join(work, filepath.FromSlash(logpath.LogDir+want.V2.Path))); err != nil {
					// The V2 content sits under the classic name only:
					// the hint names no UUID file.
					want.V2 = nil
				}
			}
			if err := os.Remove(filepath.Join(work, filepath.FromSlash(logpath.LastCheckpointKey))); err != nil {
				t.Fatal(err)
			}
			rep, err := RepairLastCheckpoint(ctx, tbl, l)
			if err != nil || rep == nil || rep.Version != want.Version || rep.Was != -1 {
				t.Fatalf("repair: %+v, %v", rep, err)
			}
			got, data := readHint(t, work)
			if got.Version != want.Version || got.Size != want.Size || *got.SizeInBytes != *want.SizeInBytes ||
				*got.NumOfAddFiles != *want.NumOfAddFiles || (got.Parts == nil) != (want.Parts == nil) ||
				(got.Parts != nil && *got.Parts != *want.Parts) || (got.V2 == nil) != (want.V2 == nil) ||
				(got.V2 != nil && *got.V2 != *want.V2) {
				t.Fatalf("repaired\n%s\nSpark wrote\n%s", data, raw)
			}
			if lc, reason, err := delta.ReadLastCheckpoint(ctx, tbl); err != nil || lc == nil || lc.Checksum == "" {
				t.Fatalf("repaired hint unreadable or without checksum: %v %s", err, reason)
			}
			if _, err := delta.LoadSnapshot(ctx, tbl, -1); err != nil {
				t.Fatal(err)
			}
			tested++
		})
	}
	if tested < 8 {
		t.Fatalf("only %d tables compared", tested)
	}
}

// A checkpoint whose _last_checkpoint write failed (the hint still names
// the checkpoint before, or is missing) gets the very document the
// writer would have written, classic and V2; a hint naming a newer checkpoint, as a concurrent writer's
// does after the listing was taken, is left alone.
func TestRepairLastCheckpointWritesWhatTheWriterWritesAndNeverGoesBack(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"dv-partitioned-with-checkpoint", "ckpt-v2-json-sidecars-101-files"} {
		t.Run(name, func(t *testing.T) {
			work, tbl, snap := logCopy(t, name, -1)
			removeCheckpointsAt(t, work, snap.Version)
			older, _ := readHint(t, work)
			_, olderDoc := readHint(t, work)
			info, err := WriteCheckpoint(ctx, tbl, snap, CheckpointOptions{Now: tombstoneNow(snap), SidecarActions: 40})
			if err != nil {
				t.Fatal(err)
			}
			_, written := readHint(t, work)
			hint := filepath.Join(work, filepath.FromSlash(logpath.LastCheckpointKey))
			// As if the hint's write had failed: the hint before stays
			// (or none, when it named the version rewritten here).
			if older.Version < info.Version {
				err = os.WriteFile(hint, olderDoc, 0o644)
			} else {
				older.Version, err = -1, os.Remove(hint)
			}
			if err != nil {
				t.Fatal(err)
			}
			rep, err := RepairLastCheckpoint(ctx, tbl, nil)
			if err != nil || rep == nil || rep.Version != info.Version || rep.Was != older.Version || rep.Key != info.Key {
				t.Fatalf("repair: %+v, %v (checkpoint %s at %d)", rep, err, info.Key, info.Version)
			}
			if _, got := readHint(t, work); string(got) != string(written) {
				t.Fatalf("repaired\n%s\nthe writer wrote\n%s", got, written)
			}

			// A listing taken when the checkpoint before was the newest,
			// and a newer hint since: no repair moves it back.
			stale := deltatest.CopyTableDir(t, work, func(rel string) bool { return rel == info.Key })
			staleList, err := delta.ListLog(ctx, logtest.Open(t, stale))
			if err != nil {
				t.Fatal(err)
			}
			if staleList.NewestCheckpoint(1<<62) >= info.Version {
				t.Fatal("the stale listing has the new checkpoint")
			}
			if rep, err := RepairLastCheckpoint(ctx, tbl, staleList); err != nil || rep != nil {
				t.Fatalf("repair from a stale listing: %+v, %v", rep, err)
			}
			if _, got := readHint(t, work); string(got) != string(written) {
				t.Fatalf("hint changed to\n%s", got)
			}
		})
	}
}
