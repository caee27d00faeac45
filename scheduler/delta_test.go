package scheduler

import (
	"context"
	"testing"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/policies"
)

func TestPollComputesTheBacklogOfARealTableAndThenCostsOneCheck(t *testing.T) {
	ctx := context.Background()
	b := &DeltaBackend{Tables: NewTables()}
	defer b.Tables.Close()
	p := testPolicy("dv")
	p.URL = "file://" + testutil.DeltaTable(t, "dv-basic-with-checkpoint")
	p.SettleWindow = 0
	res, err := b.Poll(ctx, p, -1)
	if err != nil {
		t.Fatal(err)
	}
	// INDEX.md: v46, 2 live files, ids 0..499 with the 46 multiples of 11 deleted.
	if !res.Changed || res.Version != 46 || res.Backlog == nil {
		t.Fatalf("poll = %+v", res)
	}
	bl := *res.Backlog
	if bl.Files != 2 || bl.SmallFiles != 2 || bl.SmallBytes != bl.Bytes || bl.Bytes <= 0 {
		t.Fatalf("backlog = %+v", bl)
	}
	if want := 46.0 / 500.0; bl.DeletedRowsRatio != want {
		t.Fatalf("deleted rows ratio = %v, want %v", bl.DeletedRowsRatio, want)
	}
	if got := Evaluate(p, bl, b.now(), b.now()); got != "deleted_rows_ratio" {
		t.Fatalf("trigger = %q", got)
	}
	again, err := b.Poll(ctx, p, 46)
	if err != nil || again.Changed || again.Backlog != nil || again.Version != 46 {
		t.Fatalf("idle poll = %+v, %v", again, err)
	}
}

func TestPollHaltsATableThisBuildCannotWrite(t *testing.T) {
	b := &DeltaBackend{Tables: NewTables()}
	defer b.Tables.Close()
	p := testPolicy("features")
	p.URL = "file://" + testutil.DeltaTable(t, "many-table-features")
	_, err := b.Poll(context.Background(), p, -1)
	if err == nil || commit.Class(err) != commit.Halt {
		t.Fatalf("err = %v (class %v)", err, commit.Class(err))
	}
}

func TestTheSettleWindowKeepsFreshFilesOutOfTheBacklog(t *testing.T) {
	b := &DeltaBackend{Tables: NewTables()}
	defer b.Tables.Close()
	p := testPolicy("dv")
	p.URL = "file://" + testutil.DeltaTable(t, "dv-basic-with-checkpoint")
	p.SettleWindow = 1 << 62 // longer than the table has existed
	res, err := b.Poll(context.Background(), p, -1)
	if err != nil {
		t.Fatal(err)
	}
	if res.Backlog.SmallFiles != 0 || res.Backlog.Files != 2 {
		t.Fatalf("backlog = %+v", res.Backlog)
	}
	_ = policies.DefaultPolicy
}
