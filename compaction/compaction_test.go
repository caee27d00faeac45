package compaction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/composition"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/delta/stats"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/testutil/logtest"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/planner"
)

func binpackOpts() RunOptions {
	pol := planner.DefaultPolicy()
	pol.Strategy = planner.StrategyBinpack
	pol.SettleWindow = 0
	return RunOptions{Policy: pol, EngineInfo: "compactord/test"}
}

// twoJobTable writes a table of four files of 100 rows (ids 0..399, in
// order) and plans its binpack compaction with opts, its target file size
// set to two and a half files: two jobs of two files each.
func twoJobTable(t *testing.T, opts *RunOptions) (*delta.Table, [][]int64, *planner.CompactionPlan) {
	t.Helper()
	files := [][]int64{tabletest.IDRange(0, 100), tabletest.IDRange(100, 100), tabletest.IDRange(200, 100), tabletest.IDRange(300, 100)}
	tbl := tabletest.NewTable(t, "file://"+t.TempDir(), files...)
	var maxSize int64
	for _, f := range tabletest.Latest(t, tbl).Files {
		maxSize = max(maxSize, f.Size)
	}
	opts.Policy.TargetFileSize = 2*maxSize + maxSize/2 // two files per job
	pl, _, err := PlanTable(context.Background(), tbl, *opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Jobs) != 2 {
		t.Fatalf("want 2 jobs, got %d", len(pl.Jobs))
	}
	return tbl, files, pl
}

// checkCompactionCommit checks the invariants of a compaction commit:
// commitInfo first, only dataChange=false removes and adds (and the row id
// high-water mark of row tracking tables).
func checkCompactionCommit(t testing.TB, acts []actions.Action) (removes []*actions.Remove, adds []*actions.Add) {
	t.Helper()
	if len(acts) == 0 || acts[0].CommitInfo == nil || acts[0].CommitInfo.Operation() != "OPTIMIZE" {
		t.Fatalf("commitInfo(OPTIMIZE) is not the first action")
	}
	for _, a := range acts[1:] {
		switch {
		case a.Remove != nil && !a.Remove.DataChange:
			removes = append(removes, a.Remove)
		case a.Add != nil && !a.Add.DataChange:
			adds = append(adds, a.Add)
		case a.DomainMetadata != nil && a.DomainMetadata.Domain == delta.DomainRowTracking:
			// the high-water mark of the outputs' fresh row ids
		default:
			t.Fatalf("compaction commit holds a %s action (or dataChange=true)", a.Kind())
		}
	}
	return removes, adds
}

func TestRaceCompactionAgainstDVDelete(t *testing.T) {
	a, b, c := tabletest.IDRange(0, 100), tabletest.IDRange(100, 100), tabletest.IDRange(200, 100)
	tests := []struct {
		name string
		// before runs before planning (read-time DVs).
		before func(t *testing.T, tbl *delta.Table)
		// winners commit while the compaction is about to commit.
		winners func(t *testing.T, tbl *delta.Table)
		deleted []int64
		// wantRemapped is the total rowsRemapped reported.
		wantRemapped int64
		wantWinners  int
	}{
		{name: "a source without a read-time DV",
			winners: func(t *testing.T, tbl *delta.Table) { tabletest.DeleteIDs(t, tbl, 5, 50, 99) },
			deleted: []int64{5, 50, 99}, wantRemapped: 3, wantWinners: 1},
		{name: "a source with a read-time DV remaps only the incremental deletions",
			before:  func(t *testing.T, tbl *delta.Table) { tabletest.DeleteIDs(t, tbl, 100, 110, 120) },
			winners: func(t *testing.T, tbl *delta.Table) { tabletest.DeleteIDs(t, tbl, 105, 150, 199) },
			deleted: []int64{100, 110, 120, 105, 150, 199}, wantRemapped: 3, wantWinners: 1},
		{name: "deletes in several sources of one output",
			before:  func(t *testing.T, tbl *delta.Table) { tabletest.DeleteIDs(t, tbl, 0, 201) },
			winners: func(t *testing.T, tbl *delta.Table) { tabletest.DeleteIDs(t, tbl, 1, 101, 202, 299) },
			deleted: []int64{0, 201, 1, 101, 202, 299}, wantRemapped: 4, wantWinners: 1},
		{name: "two stacked winners on the same source",
			before: func(t *testing.T, tbl *delta.Table) { tabletest.DeleteIDs(t, tbl, 150) },
			winners: func(t *testing.T, tbl *delta.Table) {
				tabletest.DeleteIDs(t, tbl, 151)
				tabletest.DeleteIDs(t, tbl, 149, 152, 10)
			},
			deleted: []int64{150, 151, 149, 152, 10}, wantRemapped: 4, wantWinners: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			tbl := tabletest.NewTable(t, "file://"+t.TempDir(), a, b, c)
			if tt.before != nil {
				tt.before(t, tbl)
			}
			opts := binpackOpts()
			pl, snap, err := PlanTable(ctx, tbl, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(pl.Jobs) != 1 || len(pl.Jobs[0].SourcePaths) != 3 {
				t.Fatalf("want one job over the 3 files, got %d jobs", len(pl.Jobs))
			}
			v := snap.Version
			opts.Commit.BeforePut = tabletest.Once(func(int64) { tt.winners(t, tbl) })
			res, err := RunPlan(ctx, tbl, pl, opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.CommittedVersion != v+1+int64(tt.wantWinners) || res.JobsCommitted != 1 || res.JobsDropped != 0 {
				t.Fatalf("result %+v, want commit at %d", res, v+1+int64(tt.wantWinners))
			}
			var remapped int64
			for _, r := range res.Reconciled {
				remapped += r.RowsRemapped
			}
			if remapped != tt.wantRemapped {
				t.Errorf("rowsRemapped %d want %d (%+v)", remapped, tt.wantRemapped, res.Reconciled)
			}
			all := tabletest.IDSet(a, b, c)
			for _, id := range tt.deleted {
				delete(all, id)
			}
			tabletest.WantIDs(t, tbl, all)
			// The commit: removes re-pointed at the winners' post-images,
			// the output carries the remapped DV with wide stats.
			removes, adds := checkCompactionCommit(t, tabletest.Committed(t, tbl, res.CommittedVersion))
			if len(removes) != 3 || len(adds) != 1 {
				t.Fatalf("%d removes, %d adds", len(removes), len(adds))
			}
			if adds[0].DeletionVector == nil || adds[0].DeletionVector.Cardinality != tt.wantRemapped {
				t.Fatalf("output DV %+v, want %d rows", adds[0].DeletionVector, tt.wantRemapped)
			}
			if st, err := stats.ParseStats(adds[0].Stats); err != nil || st.Tight() {
				t.Errorf("output stats %s must have tightBounds=false", adds[0].Stats)
			}
			pre := tabletest.Latest(t, tbl) // after the commit: none of the sources is live
			for _, r := range removes {
				for _, f := range pre.Files {
					if f.Path == r.Path {
						t.Errorf("source %s still live after compaction", r.Path)
					}
				}
			}
		})
	}
}

func TestRaceCopyOnWriteWinnerDropsOnlyItsJob(t *testing.T) {
	ctx := context.Background()
	opts := binpackOpts()
	tbl, files, pl := twoJobTable(t, &opts)
	snap := tabletest.Latest(t, tbl)
	// The copy-on-write winner rewrites a source of job 0; a DV delete hits job 1.
	victim := pl.Jobs[0].SourcePaths[0]
	var victimID, otherID int64
	for _, f := range snap.Files {
		switch f.Path {
		case victim:
			victimID = tabletest.FileIDs(t, tbl, f)[3]
		case pl.Jobs[1].SourcePaths[1]:
			otherID = tabletest.FileIDs(t, tbl, f)[7]
		}
	}
	opts.Commit.BeforePut = tabletest.Once(func(int64) {
		tabletest.CowDelete(t, tbl, victimID)
		tabletest.DeleteIDs(t, tbl, otherID)
	})
	res, err := RunPlan(ctx, tbl, pl, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.JobsCommitted != 1 || res.JobsDropped != 1 || res.Dropped[0].Kind != commit.KindCopyOnWrite || res.Dropped[0].JobID != pl.Jobs[0].ID {
		t.Fatalf("result %+v: want job %s dropped (copy-on-write) and the other committed", res, pl.Jobs[0].ID)
	}
	if res.CommittedVersion != snap.Version+3 || len(res.Reconciled) != 1 {
		t.Fatalf("committed %d, reconciled %+v", res.CommittedVersion, res.Reconciled)
	}
	all := tabletest.IDSet(files...)
	delete(all, victimID)
	delete(all, otherID)
	tabletest.WantIDs(t, tbl, all)
	assertNoOrphanParquet(t, tbl)
}

// assertNoOrphanParquet fails when a parquet object exists that no live
// file or tombstone of the tabletest.Latest snapshot (or any commit) references:
// outputs of dropped jobs must be deleted at once.
func assertNoOrphanParquet(t testing.TB, tbl *delta.Table) {
	t.Helper()
	referenced := logReferenced(t, tbl)
	for k := range storeObjects(t, tbl) {
		if strings.HasSuffix(k, ".parquet") && !referenced[k] {
			t.Errorf("orphan data file %s left behind", k)
		}
	}
}

func TestRaceMetadataChangeAbandonsTheAttempt(t *testing.T) {
	ctx := context.Background()
	files := [][]int64{tabletest.IDRange(0, 50), tabletest.IDRange(50, 50)}
	tbl := tabletest.NewTable(t, "file://"+t.TempDir(), files...)
	opts := binpackOpts()
	pl, snap, err := PlanTable(ctx, tbl, opts)
	if err != nil {
		t.Fatal(err)
	}
	md := snap.Metadata
	md.Configuration = map[string]string{"delta.enableDeletionVectors": "true", "delta.appendOnly": "false"}
	opts.Commit.BeforePut = tabletest.Once(func(v int64) {
		b, err := actions.MarshalAction(actions.Action{Metadata: &md})
		if err != nil {
			t.Fatal(err)
		}
		if err := tbl.Log.PutIfAbsent(ctx, logpath.CommitKey(v), append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	})
	res, err := RunPlan(ctx, tbl, pl, opts)
	if !errors.Is(err, commit.ErrMetadataChanged) || failure.Of(err) != failure.Retry {
		t.Fatalf("err %v, want ErrMetadataChanged (retry)", err)
	}
	if res == nil || res.CommittedVersion != -1 {
		t.Fatalf("result %+v", res)
	}
	after := tabletest.Latest(t, tbl)
	if after.Version != snap.Version+1 || len(after.Files) != 2 {
		t.Fatalf("table touched: version %d, %d files", after.Version, len(after.Files))
	}
	tabletest.WantIDs(t, tbl, tabletest.IDSet(files...))
	assertNoOrphanParquet(t, tbl)
}

func TestCompactWithoutRaceCommitsDatabricksShapedTombstones(t *testing.T) {
	ctx := context.Background()
	files := [][]int64{tabletest.IDRange(0, 4), tabletest.IDRange(4, 2), tabletest.IDRange(6, 2)}
	tbl := tabletest.NewTable(t, "file://"+t.TempDir(), files...)
	tabletest.DeleteIDs(t, tbl, 5, 6) // read-time DVs on the 2nd and 3rd file, as in DBR's v17
	res, err := Compact(ctx, tbl, binpackOpts())
	if err != nil {
		t.Fatal(err)
	}
	if res.CommittedVersion != 2 || res.FilesRemoved != 3 || res.FilesAdded != 1 || len(res.Reconciled) != 0 {
		t.Fatalf("result %+v", res)
	}
	removes, adds := checkCompactionCommit(t, tabletest.Committed(t, tbl, 2))
	offsets := map[int64]bool{}
	for _, r := range removes {
		runs, err := composition.Parse(r.Path, r.Tags)
		if err != nil || len(runs) != 1 || runs[0].Target != adds[0].Path {
			t.Fatalf("composition tags of %s: %v (%v), want one run in %s", r.Path, runs, err, adds[0].Path)
		}
		off, phys := runs[0].RowOffsetInTarget, runs[0].SourceNumPhysicalRecords
		offsets[off] = true
		if r.Stats != fmt.Sprintf(`{"numRecords":%d}`, phys) {
			t.Errorf("remove stats %s", r.Stats)
		}
	}
	// Offsets are running sums of live rows in write order: the planner may
	// order the sources differently, but the run lengths are 4, 1, 1.
	if len(offsets) != 3 || !offsets[0] {
		t.Errorf("offsets %v", offsets)
	}
	tabletest.WantIDs(t, tbl, func() map[int64]bool { m := tabletest.IDSet(files...); delete(m, 5); delete(m, 6); return m }())
}

func TestCompactRefusesUnsupportedFeaturesAsHalt(t *testing.T) {
	ctx := context.Background()
	tbl := tabletest.NewTable(t, "file://"+t.TempDir(), tabletest.IDRange(0, 10), tabletest.IDRange(10, 10))
	p := `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors","columnMapping","icebergCompatV2"]}}`
	if err := tbl.Log.PutIfAbsent(ctx, logpath.CommitKey(1), []byte(p+"\n")); err != nil {
		t.Fatal(err)
	}
	_, err := Compact(ctx, tbl, binpackOpts())
	if err == nil || !strings.Contains(err.Error(), "icebergCompatV2") || failure.Of(err) != failure.Halt {
		t.Fatalf("err %v (class %v), want a halt naming icebergCompatV2", err, failure.Of(err))
	}
	if tabletest.Latest(t, tbl).Version != 1 {
		t.Fatal("table written")
	}
}

func TestCompactWritesMonotonicInCommitTimestamps(t *testing.T) {
	ctx := context.Background()
	future := int64(4_000_000_000_000) // far ahead of the wall clock
	tbl := tabletest.NewTableWith(t, "file://"+t.TempDir(), tabletest.Spec{WriterFeatures: []string{"inCommitTimestamp"},
		Config: map[string]string{"delta.enableInCommitTimestamps": "true"}, ICT: future}, tabletest.IDRange(0, 10), tabletest.IDRange(10, 10))
	opts := binpackOpts()
	// Lose one race to a DELETE (which itself must follow the ICT rule).
	opts.Commit.BeforePut = tabletest.Once(func(int64) { tabletest.DeleteIDs(t, tbl, 3) })
	res, err := Compact(ctx, tbl, opts)
	if err != nil || res.CommittedVersion != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	prev := future
	for v := int64(1); v <= 2; v++ {
		acts := tabletest.Committed(t, tbl, v)
		ict, ok := acts[0].CommitInfo.InCommitTimestamp()
		if !ok || ict != prev+1 {
			t.Fatalf("version %d inCommitTimestamp %d (present %v), want %d", v, ict, ok, prev+1)
		}
		prev = ict
	}
	tabletest.WantIDs(t, tbl, func() map[int64]bool { m := tabletest.IDSet(tabletest.IDRange(0, 20)); delete(m, 3); return m }())
}

func TestReconciledOutputDVInlineWhenTiny(t *testing.T) {
	ctx := context.Background()
	tbl := tabletest.NewTable(t, "file://"+t.TempDir(), tabletest.IDRange(0, 30), tabletest.IDRange(30, 30))
	opts := binpackOpts()
	opts.Commit.InlineDVMaxRows = 8
	opts.Commit.BeforePut = tabletest.Once(func(int64) { tabletest.DeleteIDs(t, tbl, 7, 31) })
	res, err := Compact(ctx, tbl, opts)
	if err != nil || res.CommittedVersion != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	_, adds := checkCompactionCommit(t, tabletest.Committed(t, tbl, 2))
	if len(adds) != 1 || adds[0].DeletionVector == nil || adds[0].DeletionVector.StorageType != "i" || adds[0].DeletionVector.Cardinality != 2 {
		t.Fatalf("output DV %+v, want inline with 2 rows", adds[0].DeletionVector)
	}
	tabletest.WantIDs(t, tbl, func() map[int64]bool {
		m := tabletest.IDSet(tabletest.IDRange(0, 60))
		delete(m, 7)
		delete(m, 31)
		return m
	}())
}

// TestRaceSortedJobReconciledThroughTheOriginMap races a DV DELETE against
// a sorted (z-order on id) rewrite of two files whose ids interleave, so the
// output permutes rows across sources: the deletions are remapped through
// the writer's origin map.
func TestRaceSortedJobReconciledThroughTheOriginMap(t *testing.T) {
	ctx := context.Background()
	var even, odd []int64
	for i := int64(0); i < 200; i += 2 {
		even = append(even, i)
		odd = append(odd, i+1)
	}
	// Shuffle within files so that sorting really moves rows.
	slices.Reverse(odd)
	tbl := tabletest.NewTable(t, "file://"+t.TempDir(), even, odd)
	tabletest.DeleteIDs(t, tbl, 10, 11) // read-time DVs on both sources
	snap := tabletest.Latest(t, tbl)
	pl := &planner.CompactionPlan{ReadVersion: snap.Version, Strategy: planner.StrategyZCube,
		OperationParameters: map[string]any{"clusterBy": `["id"]`},
		Jobs: []*planner.Job{{ID: "zcube-test", Strategy: planner.StrategyZCube, PartitionValues: map[string]*string{},
			SourcePaths: []string{snap.Files[0].Path, snap.Files[1].Path},
			Sort:        &planner.SortSpec{Columns: [][]string{{"id"}}, Curve: planner.CurveZOrder}}}}
	opts := binpackOpts()
	opts.Commit.BeforePut = tabletest.Once(func(int64) {
		tabletest.DeleteIDs(t, tbl, 0, 13, 150)
		tabletest.DeleteIDs(t, tbl, 199, 100)
	})
	res, err := RunPlan(ctx, tbl, pl, opts)
	if err != nil {
		t.Fatal(err)
	}
	var remapped int64
	for _, r := range res.Reconciled {
		remapped += r.RowsRemapped
	}
	if res.CommittedVersion != snap.Version+3 || res.JobsCommitted != 1 || remapped != 5 {
		t.Fatalf("result %+v", res)
	}
	want := tabletest.IDSet(even, odd)
	for _, id := range []int64{10, 11, 0, 13, 150, 199, 100} {
		delete(want, id)
	}
	tabletest.WantIDs(t, tbl, want)
	// The output really is permuted (sorted by id), not concatenated.
	after := tabletest.Latest(t, tbl)
	ids := tabletest.FileIDs(t, tbl, after.Files[0])
	if len(after.Files) != 1 || !slices.IsSorted(ids) {
		t.Fatalf("output not sorted by id: %v", ids[:10])
	}
}

func TestCanceledCommitLeavesNoOutputs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	files := [][]int64{tabletest.IDRange(0, 20), tabletest.IDRange(20, 20)}
	tbl := tabletest.NewTable(t, "file://"+t.TempDir(), files...)
	opts := binpackOpts()
	opts.Commit.BeforePut = func(ctx context.Context, v int64) error {
		cancel() // the run is interrupted right before its put
		return ctx.Err()
	}
	if _, err := Compact(ctx, tbl, opts); !errors.Is(err, context.Canceled) || failure.Of(err) != failure.Retry {
		t.Fatalf("err %v, want a retryable cancellation", err)
	}
	if v := tabletest.Latest(t, tbl).Version; v != 0 {
		t.Fatalf("table at version %d, want untouched", v)
	}
	assertNoOrphanParquet(t, tbl)
	tabletest.WantIDs(t, tbl, tabletest.IDSet(files...))
}

func TestAmbiguousCompactionCommitIsResolvedByReReading(t *testing.T) {
	for _, land := range []bool{true, false} {
		t.Run(fmt.Sprintf("landed=%v", land), func(t *testing.T) {
			ctx := context.Background()
			files := [][]int64{tabletest.IDRange(0, 20), tabletest.IDRange(20, 20)}
			tbl := tabletest.NewTable(t, "file://"+t.TempDir(), files...)
			tabletest.DeleteIDs(t, tbl, 5)
			// Put 1 is the racing DELETE's (v2), put 2 the compaction's
			// losing one (v2), put 3 its retry at v3: that one is ambiguous.
			al := &logtest.AmbiguousLog{Inner: tbl.Log, Land: land, At: 3}
			tbl.Log = al
			opts := binpackOpts()
			opts.Commit.BeforePut = tabletest.Once(func(int64) { tabletest.DeleteIDs(t, tbl, 6, 33) })
			res, err := Compact(ctx, tbl, opts)
			if err != nil || res.CommittedVersion != 3 || len(res.Reconciled) != 2 {
				t.Fatalf("%+v %v", res, err)
			}
			wantPuts := int32(3)
			if !land {
				wantPuts = 4 // the re-read found nothing: the compaction put again
			}
			if al.Puts() != wantPuts {
				t.Fatalf("%d puts, want %d", al.Puts(), wantPuts)
			}
			tabletest.WantIDs(t, tbl, func() map[int64]bool {
				m := tabletest.IDSet(files...)
				delete(m, 5)
				delete(m, 6)
				delete(m, 33)
				return m
			}())
			assertNoOrphanParquet(t, tbl)
		})
	}
}

// TestLosingTwiceRewritesTheOutputDVAndDeletesTheFirst loses two races in a
// row: the DV written for the first retry is deleted when that retry loses
// too, and the tabletest.Committed DV holds both winners' deletions.
func TestLosingTwiceRewritesTheOutputDVAndDeletesTheFirst(t *testing.T) {
	ctx := context.Background()
	files := [][]int64{tabletest.IDRange(0, 30), tabletest.IDRange(30, 30)}
	tbl := tabletest.NewTable(t, "file://"+t.TempDir(), files...)
	opts := binpackOpts()
	calls := 0
	opts.Commit.BeforePut = tabletest.DeletesBeforePuts(t, tbl, &calls, 3, 40)
	res, err := Compact(ctx, tbl, opts)
	if err != nil || res.CommittedVersion != 3 || calls != 3 || len(res.Reconciled) != 2 {
		t.Fatalf("%+v %v (hook calls %d)", res, err, calls)
	}
	_, adds := checkCompactionCommit(t, tabletest.Committed(t, tbl, 3))
	if adds[0].DeletionVector == nil || adds[0].DeletionVector.Cardinality != 2 {
		t.Fatalf("output DV %+v, want both deletions", adds[0].DeletionVector)
	}
	tabletest.WantIDs(t, tbl, func() map[int64]bool { m := tabletest.IDSet(files...); delete(m, 3); delete(m, 40); return m }())
	// Every DV file on the store is referenced by some commit.
	referenced := logReferenced(t, tbl)
	n := 0
	for k := range storeObjects(t, tbl) {
		if strings.HasSuffix(k, ".bin") {
			n++
			if !referenced[k] {
				t.Errorf("orphan DV file %s", k)
			}
		}
	}
	if n != 3 { // two DELETEs and the committed output DV
		t.Errorf("%d DV files, want 3", n)
	}
}

// Two compactord runs on one table without leases: the one that commits
// second drops every job, and its report's holds say why and what to set,
// instead of leaving "no work to do".
func TestARunThatLostItsFilesToAnotherCompactordSaysToSetReplicas(t *testing.T) {
	ctx := context.Background()
	tbl := tabletest.NewTable(t, "file://"+t.TempDir(), tabletest.IDRange(0, 100), tabletest.IDRange(100, 100), tabletest.IDRange(200, 100))
	opts := binpackOpts()
	pl, _, err := PlanTable(ctx, tbl, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Jobs) != 1 {
		t.Fatalf("want 1 job, got %d", len(pl.Jobs))
	}
	// The other daemon plans the same files and commits first.
	opts.Commit.BeforePut = tabletest.Once(func(int64) {
		other := binpackOpts()
		if res, err := Compact(ctx, tbl, other); err != nil || res.CommittedVersion < 0 {
			t.Errorf("the other compaction: %+v, %v", res, err)
		}
	})
	res, err := RunPlan(ctx, tbl, pl, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.CommittedVersion >= 0 || res.JobsDropped != 1 {
		t.Fatalf("result %+v: want the one job dropped and nothing committed", res)
	}
	held := result(res).Held
	if len(held) == 0 || held[len(held)-1].Code != string(HeldDropped) {
		t.Fatalf("holds %+v: want a %q hold", held, HeldDropped)
	}
	h := held[len(held)-1]
	if h.Files != 3 || !strings.Contains(h.Reason, "3 files were left as they were: a concurrent commit changed them while they were rewritten (winner removed source ") ||
		!strings.Contains(h.Reason, `is another compactord's compaction of the same files; if two daemons run on this table, give each its own daemon { replica = "..." } (or --replica)`) {
		t.Fatalf("hold %q: want the dropped files and the replica hint", h.Reason)
	}
}
