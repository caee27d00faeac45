package compaction

import (
	"context"
	"testing"

	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

func TestAFileWhoseStatsContradictItsFooterIsQuarantinedAndTheRestCompacts(t *testing.T) {
	ctx := context.Background()
	// The third file's stats claim one row more than its footer holds.
	tbl, adds := tabletest.NewTableWithLyingStats(t, "mem://poison", 4, 2)
	poison := adds[2].Path
	want := map[int64]int{}
	for _, id := range tabletest.IDRange(0, 40) {
		want[id]++
	}

	op := &Op{Options: binpackOpts()}
	res, err := op.Run(ctx, tbl)
	if failure.Of(err) != failure.Quarantine {
		t.Fatalf("first run: class %v (%v), want Quarantine", failure.Of(err), err)
	}
	if len(res.Quarantined) != 1 || res.Quarantined[0] != poison {
		t.Fatalf("quarantined %v, want exactly the file with contradicting stats %s", res.Quarantined, poison)
	}

	// The next run skips it (the scheduler passes quarantined files as
	// Exclude) and compacts the rest.
	op.Options.Exclude = map[string]bool{poison: true}
	res, err = op.Run(ctx, tbl)
	if err != nil {
		t.Fatalf("run without the poisoned file: %v", err)
	}
	if !res.Committed || res.FilesRemoved != 3 {
		t.Fatalf("second run: committed %v, removed %d files; want the other 3 compacted", res.Committed, res.FilesRemoved)
	}
	got, snap := tabletest.LiveIDs(t, tbl)
	if len(snap.Files) != 2 {
		t.Fatalf("%d live files, want the compacted one and the quarantined one", len(snap.Files))
	}
	for id, n := range want {
		if got[id] != n {
			t.Fatalf("id %d: %d live copies, want %d", id, got[id], n)
		}
	}
}
