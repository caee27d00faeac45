package compaction

import (
	"context"
	"strings"
	"testing"

	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

func TestAFileWhoseStatsContradictItsFooterIsQuarantinedAndTheRestCompacts(t *testing.T) {
	ctx := context.Background()
	tbl := tabletest.NewTable(t, "mem://poison")
	var lines []string
	var poison string
	want := map[int64]int{}
	for i := int64(0); i < 4; i++ {
		ids := tabletest.IDRange(i*10, 10)
		for _, id := range ids {
			want[id]++
		}
		a := tabletest.WriteDataFile(t, tbl, ids)
		if i == 2 {
			// The stats claim one row more than the footer holds.
			a.Stats = strings.Replace(a.Stats, `"numRecords":10`, `"numRecords":11`, 1)
			poison = a.Path
		}
		lines = append(lines, tabletest.AddLine(t, a))
	}
	lines = append(lines, `{"commitInfo":{"operation":"WRITE","txnId":"w1"}}`)
	tabletest.PutCommit(t, tbl, 1, lines)

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
