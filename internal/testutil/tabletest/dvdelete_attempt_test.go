package tabletest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/dv"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

// A DELETE cleans up after a killed attempt at its start, as compaction and
// retention do: a record unmodified for longer than the staleness window is
// dead, and the DV file it names (written, never committed) goes with its
// upload temp file and the record; a live record (heartbeated a minute ago)
// stays with what it names. The DELETE's own record is gone once it
// committed.
func TestDeleteRowsSweepsTheDeadAttemptsOfKilledRuns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl := tabletest.NewTable(t, "file://"+filepath.ToSlash(dir), tabletest.IDRange(0, 10), tabletest.IDRange(10, 10))
	orphanDV := func() string {
		dvs, err := delta.WriteDV(ctx, tbl, "", []*roaring64.Bitmap{roaring64.BitmapOf(1, 2)})
		if err != nil {
			t.Fatal(err)
		}
		key, err := dv.DVFileKey(dvs[0].PathOrInlineDv)
		if err != nil {
			t.Fatal(err)
		}
		return key
	}
	dead, live := orphanDV(), orphanDV()
	temp := dead + ".18a2b3c4d5e6f.tmp"
	if err := tbl.Bucket.WriteAll(ctx, temp, []byte("half an upload"), nil); err != nil {
		t.Fatal(err)
	}
	deadRecord := tabletest.KilledAttempt(t, tbl, "delete", dead)
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(deadRecord)), old, old); err != nil {
		t.Fatal(err)
	}
	liveRecord := tabletest.KilledAttempt(t, tbl, "delete", live)
	recent := time.Now().Add(-time.Minute)
	if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(liveRecord)), recent, recent); err != nil {
		t.Fatal(err)
	}

	tabletest.DeleteIDs(t, tbl, 3, 14)

	after := tabletest.StoreObjects(t, tbl)
	for _, k := range []string{dead, temp, deadRecord} {
		if after[k] {
			t.Errorf("%s, left by the killed attempt, still exists after the next DELETE", k)
		}
	}
	for _, k := range []string{live, liveRecord} {
		if !after[k] {
			t.Errorf("%s, of a live attempt, was deleted", k)
		}
	}
	for k := range after {
		if strings.HasPrefix(k, attempt.RecordsDir) && k != liveRecord {
			t.Errorf("record %s is left after the DELETE committed", k)
		}
	}
	want := tabletest.IDSet(tabletest.IDRange(0, 20))
	delete(want, 3)
	delete(want, 14)
	tabletest.WantIDs(t, tbl, want)
}

// A DV file whose upload lands and then fails (the put's Close answers an
// error) is deleted by the DELETE that wrote it, and its key was in the
// DELETE's intent record before it was created, so that a kill at that
// point leaves nothing unnamed either.
func TestADVFileWhoseCloseFailsAfterItLandedIsNotLeftBehind(t *testing.T) {
	ctx := context.Background()
	tbl := tabletest.NewTable(t, "file://"+filepath.ToSlash(t.TempDir()), tabletest.IDRange(0, 10))
	fail := tabletest.FailClosesAfterLanding(t, tbl, "deletion_vector_")
	snap := tabletest.Latest(t, tbl)
	_, err := tabletest.DeleteRows(ctx, tbl, snap, map[string][]int64{snap.Files[0].Path: {1, 2}}, tabletest.DeleteOptions{})
	if err == nil || !errors.Is(err, tabletest.ErrClosedAfterLanding) {
		t.Fatalf("DeleteRows = %v, want the failed close", err)
	}
	fail.WantNoneLeft(t, tbl)
	tabletest.WantIDs(t, tbl, tabletest.IDSet(tabletest.IDRange(0, 10)))
}
