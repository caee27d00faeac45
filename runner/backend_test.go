package runner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/compactord/compactord/checkpoint"
	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/attemptsweep"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/logcleanup"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/retention"
	"github.com/compactord/compactord/scheduler"
	"github.com/compactord/compactord/scheduler/lease"
	"github.com/compactord/compactord/statsbackfill"
	"github.com/compactord/compactord/vacuum"
)

func TestPollComputesTheBacklogOfARealTableAndThenCostsOneCheck(t *testing.T) {
	ctx := context.Background()
	b := &Backend{Tables: NewTables()}
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
	if bl.Files != 2 || bl.SmallFiles != 2 || bl.SmallBytes != bl.Bytes || bl.Bytes <= 0 || bl.MergeableFiles != 2 || len(bl.Held) != 0 {
		t.Fatalf("backlog = %+v", bl)
	}
	if want := 46.0 / 500.0; bl.DeletedRowsRatio != want {
		t.Fatalf("deleted rows ratio = %v, want %v", bl.DeletedRowsRatio, want)
	}
	if got := scheduler.Evaluate(scheduler.Triggers(p.Triggers), bl, b.now(), b.now()); got != "deleted_rows_ratio" {
		t.Fatalf("trigger = %q", got)
	}
	again, err := b.Poll(ctx, p, 46)
	if err != nil || again.Changed || again.Backlog != nil || again.Version != 46 {
		t.Fatalf("idle poll = %+v, %v", again, err)
	}
}

func TestPollHaltsATableThisBuildCannotWrite(t *testing.T) {
	b := &Backend{Tables: NewTables()}
	defer b.Tables.Close()
	p := testPolicy("features")
	p.URL = "file://" + testutil.DeltaTable(t, "many-table-features")
	_, err := b.Poll(context.Background(), p, -1)
	if err == nil || failure.Of(err) != failure.Halt {
		t.Fatalf("err = %v (class %v)", err, failure.Of(err))
	}
}

func TestTheSettleWindowHoldsFreshFilesBackAndTheBacklogSaysSo(t *testing.T) {
	b := &Backend{Tables: NewTables()}
	defer b.Tables.Close()
	p := testPolicy("dv")
	p.URL = "file://" + testutil.DeltaTable(t, "dv-basic-with-checkpoint")
	p.SettleWindow = 1 << 62 // longer than the table has existed
	res, err := b.Poll(context.Background(), p, -1)
	if err != nil {
		t.Fatal(err)
	}
	bl := res.Backlog
	if bl.SmallFiles != 2 || bl.MergeableFiles != 0 || bl.Files != 2 {
		t.Fatalf("backlog = %+v, want 2 small files, none mergeable", bl)
	}
	if len(bl.Held) != 1 || bl.Held[0].Code != "settling" || bl.Held[0].Files != 2 || bl.Held[0].EligibleAt == nil {
		t.Fatalf("held back = %+v, want the 2 files in the settle window", bl.Held)
	}
	_ = policies.DefaultPolicy
}

func TestAPollAfterNewCommitsReplaysOnlyThoseCommits(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "dv")
	if err := os.CopyFS(dir, os.DirFS(testutil.DeltaTable(t, "dv-basic-with-checkpoint"))); err != nil {
		t.Fatal(err)
	}
	b := &Backend{Tables: NewTables()}
	defer b.Tables.Close()
	p := testPolicy("dv")
	p.URL = "file://" + dir
	p.SettleWindow = 0
	first, err := b.Poll(ctx, p, -1)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := b.Tables.Get(ctx, p.URL)
	if err != nil {
		t.Fatal(err)
	}
	// Two DV DELETEs: each commit removes a file with its old DV and adds it back with a new one.
	for _, rows := range [][]int64{{1, 2, 3}, {4, 5}} {
		snap, err := delta.LoadSnapshot(ctx, tb, -1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tabletest.DeleteRows(ctx, tb, snap, map[string][]int64{snap.Files[0].Path: rows}, tabletest.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := b.Poll(ctx, p, first.Version)
	if err != nil {
		t.Fatal(err)
	}
	if b.FullLoads() != 1 {
		t.Fatalf("full loads = %d, want 1 (the second poll must replay only new commits)", b.FullLoads())
	}
	full, err := delta.LoadSnapshot(ctx, tb, -1)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ComputeBacklog(full, p, b.now())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || res.Version != first.Version+2 || !sameBacklog(*res.Backlog, want) {
		t.Fatalf("incremental poll = %+v %+v, full = %+v", res, res.Backlog, want)
	}
	if want.DeletedRowsRatio != (46.0+5)/500 {
		t.Fatalf("deleted rows ratio = %v", want.DeletedRowsRatio)
	}
	// A poll from a version the backend did not follow loads in full.
	again, err := b.Poll(ctx, p, first.Version)
	if err != nil || b.FullLoads() != 2 {
		t.Fatalf("poll from an old version: %v, full loads %d", err, b.FullLoads())
	}
	// A reload that clusters on id needs id's stats, which the slim view
	// cut to binpack's (none) no longer has: the next poll loads in full.
	snap, err := delta.LoadSnapshot(ctx, tb, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tabletest.DeleteRows(ctx, tb, snap, map[string][]int64{snap.Files[0].Path: {6}}, tabletest.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	zp := p
	zp.Strategy = "zcube"
	zp.Clustering.Columns = []string{"id"}
	res, err = b.Poll(ctx, zp, again.Version)
	if err != nil || b.FullLoads() != 3 {
		t.Fatalf("poll after the clustering columns changed: %v, full loads %d, want 3", err, b.FullLoads())
	}
	if full, err = delta.LoadSnapshot(ctx, tb, -1); err != nil {
		t.Fatal(err)
	}
	if want, err = ComputeBacklog(full, zp, b.now()); err != nil || !sameBacklog(*res.Backlog, want) {
		t.Fatalf("backlog under the clustering policy = %+v, of a full load %+v (%v)", res.Backlog, want, err)
	}
}

func TestWithLeasesARunSkipsATableAnotherReplicaHoldsAndReleasesItsOwn(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "dv")
	if err := os.CopyFS(dir, os.DirFS(testutil.DeltaTable(t, "dv-basic-with-checkpoint"))); err != nil {
		t.Fatal(err)
	}
	b := &Backend{Tables: NewTables(), LeaseHolder: "replica-a", LeaseTTL: time.Minute}
	defer b.Tables.Close()
	p := testPolicy("dv")
	p.URL = "file://" + dir
	p.SettleWindow = 0
	tb, err := b.Tables.Get(ctx, p.URL)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := tb.Conditional()
	if err != nil {
		t.Fatal(err)
	}
	other, err := lease.New(cs, tb.URL, "replica-b", lease.Options{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if held, err := other.Acquire(ctx); err != nil || !held {
		t.Fatalf("replica-b acquire: %v %v", held, err)
	}
	rep, err := b.Run(ctx, scheduler.RunRequest[policies.Policy]{Table: "dv", Op: compaction.Name, Policy: p})
	if err != nil || !rep.Skipped || rep.Committed {
		t.Fatalf("run while replica-b holds the lease: %+v, %v", rep, err)
	}
	if v, _ := delta.LatestVersion(ctx, tb); v != 46 {
		t.Fatalf("the skipped run changed the table: version %d", v)
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err = b.Run(ctx, scheduler.RunRequest[policies.Policy]{Table: "dv", Op: compaction.Name, Policy: p})
	if err != nil || rep.Skipped || !rep.Committed {
		t.Fatalf("run with the lease free: %+v, %v", rep, err)
	}
	// The run released its lease: another replica takes it at once.
	again, _ := lease.New(cs, tb.URL, "replica-b", lease.Options{TTL: time.Hour})
	if held, err := again.Acquire(ctx); err != nil || !held {
		t.Fatalf("lease not released after the run: %v %v", held, err)
	}
}

func TestTheBacklogOfATableClusteredByItsOwnMetadataCountsUnclusteredBytes(t *testing.T) {
	_, snap := loadShared(t, "ckpt-only-domain-metadata-clustering-rowtracking")
	p := testPolicy("c") // auto, no clustering columns in the policy
	p.SettleWindow = 0
	bl, err := ComputeBacklog(snap, p, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var unclustered int64
	for _, f := range snap.Files {
		if f.ClusteringProvider == nil {
			unclustered += f.Size
		}
	}
	if bl.Files != 109 || bl.UnclusteredBytes != unclustered || unclustered == 0 {
		t.Fatalf("backlog = %+v, unclustered by hand = %d", bl, unclustered)
	}
}

// The daemon runs a table's retention rule after its compaction, on the
// same schedule: expired days are gone, and the report carries the rows.
func TestDaemonRunsRetentionAfterCompaction(t *testing.T) {
	ctx := context.Background()
	tbl, byDay := tabletest.NewDayTable(t, []int{0, 0, 1, 1, 2, 2, 30, 30})
	now := time.Date(2026, 1, 31, 12, 0, 0, 0, time.UTC) // day 30
	b := &Backend{Tables: NewTables(), Now: func() time.Time { return now }}
	defer b.Tables.Close()
	p := testPolicy("days")
	p.URL = tbl.URL
	p.SettleWindow = 0
	p.Retention = &policies.Retention{Column: "day", OlderThan: 29 * 24 * time.Hour} // cutoff: day 1 12:00
	if ops := b.OpsFor(p); !slices.Equal(ops, []string{compaction.Name, retention.Name, checkpoint.Name, logcleanup.Name, vacuum.Name}) {
		t.Fatalf("operations %v, want compaction, retention, checkpoint, log cleanup, then vacuum (the temp sweep)", ops)
	}
	comp, err := b.Run(ctx, scheduler.RunRequest[policies.Policy]{Table: "days", Op: compaction.Name, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	ret, err := b.Run(ctx, scheduler.RunRequest[policies.Policy]{Table: "days", Op: retention.Name, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	// The cutoff instant is 2026-01-02 12:00; a date expires only once all
	// of it is older, so day 0 (2026-01-01) goes and day 1 stays: its two
	// files (compacted into one by the run first) hold 20 rows.
	if ret.Counts[retention.CountRowsExpired] != 20 || !ret.Committed || ret.Version <= comp.Version || comp.Counts[compaction.CountJobsCommitted] == 0 {
		t.Fatalf("compaction %+v, retention %+v: want a compaction and 20 rows expired", comp, ret)
	}
	want := tabletest.IDSet(byDay[1], byDay[2], byDay[30])
	tabletest.WantIDs(t, tbl, want)
}

// A compaction run's start sweeps a killed attempt's leftovers once its
// record is older than the backend's window (the daemon block's
// attempt_stale_after; default 1h), and the run's report counts them (the
// daemon's /status and metrics read them).
func TestCompactionRunReportsTheAttemptsItsStartSwept(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window time.Duration
		swept  bool
	}{
		{"ten minutes old, default window: live", 0, false},
		{"ten minutes old, a 5m window: dead", 5 * time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			tbl := tabletest.NewTable(t, dir, tabletest.IDRange(0, 10), tabletest.IDRange(10, 10))
			orphan, err := tabletest.WriteDataFile(t, tbl, tabletest.IDRange(100, 5)).Key()
			if err != nil {
				t.Fatal(err)
			}
			record := tabletest.KilledAttempt(t, tbl, compaction.Name, orphan)
			last := time.Now().Add(-10 * time.Minute)
			if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(record)), last, last); err != nil {
				t.Fatal(err)
			}
			b := &Backend{Tables: NewTables(), Options: compaction.RunOptions{AttemptStaleAfter: tc.window}}
			defer b.Tables.Close()
			p := testPolicy("swept")
			p.URL = tbl.URL
			rep, err := b.Run(ctx, scheduler.RunRequest[policies.Policy]{Table: "swept", Op: compaction.Name, Policy: p})
			if err != nil {
				t.Fatal(err)
			}
			want := int64(0)
			if tc.swept {
				want = 1
			}
			if rep.Counts[attemptsweep.CountAttempts] != want || rep.Counts[attemptsweep.CountObjects] != want {
				t.Fatalf("report counts %v: want %d swept attempts and objects", rep.Counts, want)
			}
			if after := tabletest.StoreObjects(t, tbl); after[orphan] == tc.swept || after[record] == tc.swept {
				t.Fatalf("the killed attempt's output exists %v, its record %v; want %v", after[orphan], after[record], !tc.swept)
			}
		})
	}
}

// testPolicy is the default policy of a mem:// table called name.
func testPolicy(name string) policies.Policy {
	p := policies.DefaultPolicy()
	p.Name = name
	p.URL = "mem://" + name
	return p
}

// The daemon vacuums a table with a vacuum block after its compaction (a
// full vacuum first, then nothing until the interval passed), and a table
// without one gets the sweep of temp leftovers older than the retention.
func TestDaemonVacuumsAfterCompactionAndSweepsTempLeftoversOtherwise(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl := tabletest.NewTable(t, dir, tabletest.IDRange(0, 10), tabletest.IDRange(10, 10))
	now := time.Now()
	b := &Backend{Tables: NewTables(), Now: func() time.Time { return now }}
	defer b.Tables.Close()
	p := testPolicy("vac")
	p.URL = tbl.URL
	p.SettleWindow = 0
	if _, err := b.Run(ctx, scheduler.RunRequest[policies.Policy]{Table: "vac", Op: compaction.Name, Policy: p}); err != nil {
		t.Fatal(err)
	}
	leftover := filepath.Join(dir, "part-00000-killed.snappy.parquet.17f3c2a1b0.tmp")
	logLeftover := filepath.Join(dir, "_delta_log", ".00000000000000000002.json.1234567.tmp")
	for _, f := range []string{leftover, logLeftover} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Without a vacuum block: the sweep, and only past the retention.
	rep, err := b.Run(ctx, scheduler.RunRequest[policies.Policy]{Table: "vac", Op: vacuum.Name, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(leftover); err != nil || rep.Counts[vacuum.CountFilesDeleted] != 0 {
		t.Fatalf("a fresh leftover was swept: %v, %+v", err, rep)
	}
	now = now.Add(8 * 24 * time.Hour)
	rep, err = b.Run(ctx, scheduler.RunRequest[policies.Policy]{Table: "vac", Op: vacuum.Name, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{leftover, logLeftover} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s survived the sweep past the retention", f)
		}
	}
	if rep.Counts[vacuum.CountTempFiles] != 2 {
		t.Errorf("sweep report %+v, want 2 temp files", rep.Counts)
	}
	// With a vacuum block: the compacted-away sources go.
	p.Vacuum = &policies.Vacuum{Mode: policies.VacuumAuto, Interval: time.Hour, FullInterval: 24 * time.Hour}
	if ops := b.OpsFor(p); !slices.Equal(ops, []string{compaction.Name, checkpoint.Name, logcleanup.Name, vacuum.Name}) {
		t.Fatalf("operations %v", ops)
	}
	rep, err = b.Run(ctx, scheduler.RunRequest[policies.Policy]{Table: "vac", Op: vacuum.Name, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Counts[vacuum.CountFilesDeleted] != 2 || !rep.Committed {
		t.Fatalf("vacuum report %+v, want the 2 compacted sources deleted", rep)
	}
	tabletest.WantIDs(t, tbl, tabletest.IDSet(tabletest.IDRange(0, 20)))
	// Inside the interval: nothing.
	now = now.Add(30 * time.Minute)
	rep, err = b.Run(ctx, scheduler.RunRequest[policies.Policy]{Table: "vac", Op: vacuum.Name, Policy: p})
	if err != nil || rep.Committed || rep.Counts[vacuum.CountFilesDeleted] != 0 {
		t.Fatalf("vacuum inside the interval: %+v, %v", rep, err)
	}
}

// A policy's stats_backfill block makes the daemon compute the statistics
// of files written without them, before its vacuum.
func TestDaemonBackfillsStatisticsOfFilesWrittenWithoutThem(t *testing.T) {
	ctx := context.Background()
	tbl := tabletest.CopyFixture(t, "part-special-chars")
	b := &Backend{Tables: NewTables()}
	defer b.Tables.Close()
	p := testPolicy("special")
	p.URL = tbl.URL
	p.StatsBackfill = &policies.StatsBackfill{MaxFiles: 1}
	if ops := b.OpsFor(p); !slices.Equal(ops, []string{compaction.Name, statsbackfill.Name, checkpoint.Name, logcleanup.Name, vacuum.Name}) {
		t.Fatalf("operations %v", ops)
	}
	for range 2 {
		rep, err := b.Run(ctx, scheduler.RunRequest[policies.Policy]{Table: "special", Op: statsbackfill.Name, Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Counts[statsbackfill.CountFilesBackfilled] != 1 {
			t.Fatalf("report %+v, want one file per run (max_files = 1)", rep)
		}
	}
	for _, f := range tabletest.Latest(t, tbl).Files {
		if f.Stats == "" {
			t.Errorf("%s still has no stats", f.Path)
		}
	}
}

// The specs of tables whose policies run the same operations hold one
// list of them, which no table's spec can change for another: the slice
// ends at its length, so an append copies it.
func TestSpecsOfTablesRunningTheSameOperationsShareOneList(t *testing.T) {
	be := &Backend{Tables: NewTables()}
	a, b := policies.DefaultPolicy(), policies.DefaultPolicy()
	a.Name, a.URL = "a", "file:///tmp/a"
	b.Name, b.URL = "b", "file:///tmp/b"
	var specs []scheduler.Spec
	for _, p := range []policies.Policy{a, b} {
		sp, err := be.Spec(p)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, sp)
	}
	sa, sb := specs[0], specs[1]
	if len(sa.Ops) == 0 || &sa.Ops[0] != &sb.Ops[0] || !slices.Equal(sa.Ops, be.OpsFor(a)) {
		t.Fatalf("two tables of one policy hold two lists of operations: %v %v", sa.Ops, sb.Ops)
	}
	want := slices.Clone(sb.Ops)
	_ = append(sa.Ops, "extra")
	if !slices.Equal(sb.Ops, want) || cap(sa.Ops) != len(sa.Ops) {
		t.Fatalf("an append to one table's operations changed another's: %v", sb.Ops)
	}
}
