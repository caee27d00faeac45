package runner

import (
	"context"
	"fmt"
	"testing"

	"github.com/compactord/compactord/checkpoint"
	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/internal/testutil/logtest"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/scheduler"
)

// A writer appends small files while the daemon compacts, checkpoints and
// cleans the log, over more than 100 versions: every multiple of the
// interval that compactord committed has a checkpoint, _last_checkpoint
// names the newest checkpoint, a load replays at most interval JSON
// commits, and the rows are the writer's.
func TestDaemonCheckpointsItsCommitsOnMultiplesOfTheInterval(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const interval = 5
	tbl := tabletest.NewTableWith(t, dir, tabletest.Spec{Config: map[string]string{"delta.checkpointInterval": fmt.Sprint(interval)}},
		tabletest.IDRange(0, 3))
	b := &Backend{Tables: NewTables(), EngineInfo: "compactord/test"}
	defer b.Tables.Close()
	p := testPolicy("ckpt")
	p.URL = tbl.URL
	p.SettleWindow = 0
	p.Triggers.SmallFiles = 1
	next := int64(3)
	ours := map[int64]bool{}
	for round := 0; ; round++ {
		// The writer appends one to three commits.
		for k := 0; k <= round%3; k++ {
			v, err := delta.LatestVersion(ctx, tbl)
			if err != nil {
				t.Fatal(err)
			}
			a := tabletest.WriteDataFile(t, tbl, tabletest.IDRange(next, 3))
			next += 3
			logtest.CommitAs(t, tbl, v+1, "writer/1", actions.Action{Add: a})
		}
		for _, op := range b.OpsFor(p) {
			rep, err := b.Run(ctx, scheduler.RunRequest[policies.Policy]{Table: "ckpt", Op: op, Policy: p})
			if err != nil {
				t.Fatalf("round %d %s: %v", round, op, err)
			}
			if op == compaction.Name && rep.Committed {
				ours[rep.Version] = true
			}
			if op == checkpoint.Name && rep.Counts[checkpoint.CountFailed] != 0 {
				t.Fatalf("round %d: %d checkpoints failed", round, rep.Counts[checkpoint.CountFailed])
			}
		}
		latest, err := delta.LatestVersion(ctx, tbl)
		if err != nil {
			t.Fatal(err)
		}
		if latest > 100 {
			break
		}
	}
	l, err := delta.ListLog(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	have := map[int64]bool{}
	for _, v := range l.CompleteCheckpoints() {
		have[v] = true
	}
	multiples := 0
	for v := range ours {
		if v%interval == 0 {
			multiples++
			if !have[v] {
				t.Errorf("compactord committed version %d and it has no checkpoint", v)
			}
		}
	}
	if multiples < 3 {
		t.Fatalf("only %d of compactord's %d commits landed on multiples of %d", multiples, len(ours), interval)
	}
	latest := l.LatestCommit()
	newest := l.NewestCheckpoint(latest)
	if lc, err := delta.LastCheckpointVersion(ctx, tbl); err != nil || lc != newest {
		t.Fatalf("_last_checkpoint = %d (%v), newest checkpoint %d", lc, err, newest)
	}
	if latest-newest > interval {
		t.Fatalf("a load of version %d replays %d JSON commits after checkpoint %d (interval %d)", latest, latest-newest, newest, interval)
	}
	ids, _ := tabletest.LiveIDs(t, tbl)
	if int64(len(ids)) != next {
		t.Fatalf("%d live ids, the writer wrote %d", len(ids), next)
	}
	for id, n := range ids {
		if n != 1 || id < 0 || id >= next {
			t.Fatalf("id %d seen %d times", id, n)
		}
	}
}
