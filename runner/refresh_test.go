package runner

import (
	"context"
	"testing"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/scheduler"
)

// A compaction that committed returns the table as it left it: the
// version it committed and the backlog of that snapshot (its small files
// merged), read from the poll's view of the table (the commits after it
// only, no full load); the next poll from that version finds nothing new.
// An operation that committed nothing returns none.
func TestARunThatCommittedReturnsTheBacklogItLeft(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl := tabletest.NewTable(t, dir, tabletest.IDRange(0, 10), tabletest.IDRange(10, 10), tabletest.IDRange(20, 10), tabletest.IDRange(30, 10))
	b := &Backend{Tables: NewTables()}
	defer b.Tables.Close()
	p := testPolicy("fresh")
	p.URL = tbl.URL
	p.SettleWindow = 0
	before, err := b.Poll(ctx, p, -1)
	if err != nil {
		t.Fatal(err)
	}
	if before.Backlog == nil || before.Backlog.MergeableFiles != 4 {
		t.Fatalf("the first poll's backlog %+v, want 4 mergeable files", before.Backlog)
	}
	loads := b.FullLoads()
	rep, err := b.Run(ctx, scheduler.RunRequest[policies.Policy]{Table: "fresh", Op: compaction.Name, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Committed || rep.Polled == nil || rep.Polled.Backlog == nil {
		t.Fatalf("report %+v: want a commit and the table it left", rep)
	}
	if bl := rep.Polled.Backlog; rep.Polled.Version != rep.Version || bl.MergeableFiles != 0 || bl.SmallFiles != 1 || bl.Files != 1 {
		t.Fatalf("the run left version %d with backlog %+v; want version %d, one file, nothing to merge", rep.Polled.Version, bl, rep.Version)
	}
	if n := b.FullLoads(); n != loads {
		t.Errorf("the refresh loaded the whole snapshot (%d full loads, %d before)", n, loads)
	}
	after, err := b.Poll(ctx, p, rep.Polled.Version)
	if err != nil || after.Changed || after.Version != rep.Version {
		t.Fatalf("the poll after the run: %+v, %v; want version %d unchanged", after, err, rep.Version)
	}
	again, err := b.Run(ctx, scheduler.RunRequest[policies.Policy]{Table: "fresh", Op: compaction.Name, Policy: p})
	if err != nil || again.Committed || again.Polled != nil {
		t.Fatalf("a run with nothing to do: %+v, %v; want no commit and no refresh", again, err)
	}
}
