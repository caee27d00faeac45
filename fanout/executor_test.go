package fanout

import (
	"encoding/json"

	"github.com/hashicorp/go-hclog"

	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/internal/attemptsweep"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/planner"
)

// inProcess launches each unit as RunUnit calls in this process (the
// worker's real code, without a binary to build): attempts[i] complete
// attempts of unit i (default 1), one after the other.
type inProcess struct {
	attempts map[int]int
}

func (l inProcess) Launch(ctx context.Context, spec LaunchSpec, report func(UnitStatus)) error {
	for i := 0; i < spec.Units; i++ {
		n := max(l.attempts[i], 1)
		st := UnitStatus{Index: i, Succeeded: true}
		for a := 0; a < n; a++ {
			st.Attempts++
			if _, err := RunUnit(ctx, spec.PlanURL, i, WorkerOptions{}); err != nil {
				st.Succeeded, st.ExitCode, st.Reason = false, ExitCode(err), err.Error()
				break
			}
		}
		report(st)
	}
	return nil
}

// A unit that two attempts both finished (a pod retried after its first
// attempt wrote its manifest after all) is committed once: the
// coordinator takes one manifest and deletes the other's outputs.
func TestTwoCompleteAttemptsOfAUnitCommitOnce(t *testing.T) {
	tbl, pl, snap := planned(t, 8, 10)
	want := map[int64]bool{}
	for _, f := range snap.Files {
		for _, id := range tabletest.FileIDs(t, tbl, f) {
			want[id] = true
		}
	}
	res, err := compaction.RunPlan(context.Background(), tbl, pl, compaction.RunOptions{
		Executor: &Executor{Launcher: inProcess{attempts: map[int]int{0: 2, 2: 3}}}, CommitEveryJobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.JobsCommitted != len(pl.Jobs) {
		t.Fatalf("committed %d of %d jobs", res.JobsCommitted, len(pl.Jobs))
	}
	tabletest.WantIDs(t, tbl, want)
	ref := tabletest.LogReferenced(t, tbl)
	for k := range tabletest.StoreObjects(t, tbl) {
		if !ref[k] {
			t.Errorf("orphan object %s", k)
		}
	}
}

// A plan directory older than the window, whose coordinator died after
// committing one unit, is swept: the committed unit's outputs stay, the
// other unit's outputs and the directory go; a younger plan stays.
func TestSweepPlansDeletesStalePlansAndKeepsCommittedOutputs(t *testing.T) {
	tbl, pl, _ := planned(t, 4, 10)
	ctx := context.Background()
	now := time.Now()
	store := func(at time.Time) (*StoredPlan, string) {
		sp := &StoredPlan{ID: NewPlanID(at), Table: tbl.URL, ReadVersion: pl.ReadVersion, Units: SplitUnits(pl.Jobs, 0), Plan: pl}
		url, err := StorePlan(ctx, tbl, sp)
		if err != nil {
			t.Fatal(err)
		}
		return sp, url
	}
	old, oldURL := store(now.Add(-7 * time.Hour))
	young, _ := store(now.Add(-time.Minute))
	var outs [2][]string
	for i := range outs {
		m, err := RunUnit(ctx, oldURL, i, WorkerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range m.Jobs[0].Outputs {
			outs[i] = append(outs[i], o.Key)
		}
	}
	// The dead coordinator committed unit 0's outputs (as a blind append
	// here: only the log's reference matters to the sweep).
	var lines []string
	for _, k := range outs[0] {
		lines = append(lines, tabletest.AddLine(t, &actions.Add{Path: k, Size: 1, DataChange: true}))
	}
	tabletest.PutCommit(t, tbl, 1, lines)

	n, err := SweepPlans(ctx, tbl, now.Add(-DefaultStaleAfter), nil)
	if err != nil || n != 1 {
		t.Fatalf("SweepPlans = %d, %v; want 1 plan", n, err)
	}
	keys := tabletest.Keys(t, tbl)
	for _, k := range outs[0] {
		if !slices.Contains(keys, k) {
			t.Errorf("committed output %s was deleted", k)
		}
	}
	for _, k := range outs[1] {
		if slices.Contains(keys, k) {
			t.Errorf("uncommitted output %s of the stale plan is still there", k)
		}
	}
	for _, k := range keys {
		if strings.HasPrefix(k, PlanDir(old.ID)) {
			t.Errorf("stale plan object %s is still there", k)
		}
	}
	if !slices.Contains(keys, planKey(young.ID)) {
		t.Errorf("the young plan %s was swept", young.ID)
	}
}

// counting is inProcess, counting its launches.
type counting struct {
	inProcess
	launches *int
}

func (c counting) Launch(ctx context.Context, spec LaunchSpec, report func(UnitStatus)) error {
	*c.launches++
	return c.inProcess.Launch(ctx, spec, report)
}

func TestBySizeFansOutOnlyPlansThatReadEnough(t *testing.T) {
	for _, tt := range []struct {
		name     string
		minBytes func(planned int64) int64
		launches int
	}{
		{"a plan reading the threshold fans out", func(n int64) int64 { return n }, 1},
		{"a plan reading less runs here", func(n int64) int64 { return n + 1 }, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tbl, pl, _ := planned(t, 4, 10)
			var bytes int64
			for _, j := range pl.Jobs {
				bytes += j.SourceBytes
			}
			n := 0
			ex := BySize{MinBytes: tt.minBytes(bytes), Remote: &Executor{Launcher: counting{launches: &n}}}
			res, err := compaction.RunPlan(context.Background(), tbl, pl, compaction.RunOptions{Executor: ex})
			if err != nil || res.JobsCommitted != len(pl.Jobs) {
				t.Fatalf("run: %v (%+v)", err, res)
			}
			if n != tt.launches {
				t.Fatalf("%d launches, want %d", n, tt.launches)
			}
		})
	}
}

// A sorted job's origin map travels from the worker to the committer: a
// DELETE that lands before the commit is remapped onto the permuted
// outputs through it, row for row.
func TestASortedUnitsOriginsReconcileAConcurrentDelete(t *testing.T) {
	tbl, pl, snap := planned(t, 4, 50)
	for _, j := range pl.Jobs {
		j.Sort = &planner.SortSpec{Columns: [][]string{{"v"}}, Curve: planner.CurveZOrder}
	}
	want := map[int64]bool{}
	for _, f := range snap.Files {
		for _, id := range tabletest.FileIDs(t, tbl, f) {
			want[id] = true
		}
	}
	racing := []int64{3, 49, 50, 77, 120, 199}
	for _, id := range racing {
		delete(want, id)
	}
	opts := compaction.RunOptions{Executor: &Executor{Launcher: inProcess{}}}
	opts.Commit.BeforePut = tabletest.Once(func(int64) { tabletest.DeleteIDs(t, tbl, racing...) })
	res, err := compaction.RunPlan(context.Background(), tbl, pl, opts)
	if err != nil {
		t.Fatal(err)
	}
	var remapped int64
	for _, r := range res.Reconciled {
		remapped += r.RowsRemapped
	}
	if res.JobsCommitted != len(pl.Jobs) || remapped != int64(len(racing)) {
		t.Fatalf("committed %d of %d jobs, remapped %d rows (%+v), want all and %d", res.JobsCommitted, len(pl.Jobs), remapped, res.Reconciled, len(racing))
	}
	tabletest.WantIDs(t, tbl, want)
}

// TestDeletePlanKeepsWhatTheReadSnapshotReferences: an intent record that
// a writer of the table planted in a running plan's directory, naming the
// table's live files and log, makes the run's cleanup delete none of them
// (the cleanup deletes only what no commit and no read-snapshot file is).
func TestDeletePlanKeepsWhatTheReadSnapshotReferences(t *testing.T) {
	tbl, pl, _ := planned(t, 4, 10)
	ctx := context.Background()
	snap, err := delta.LoadSnapshot(ctx, tbl, -1)
	if err != nil {
		t.Fatal(err)
	}
	sp := &StoredPlan{ID: NewPlanID(time.Now()), Table: tbl.URL, ReadVersion: pl.ReadVersion, Units: SplitUnits(pl.Jobs, 0), Plan: pl}
	if _, err := StorePlan(ctx, tbl, sp); err != nil {
		t.Fatal(err)
	}
	live := snap.Files[0].Path
	abandoned := "part-abandoned.parquet"
	if err := tbl.Bucket.WriteAll(ctx, abandoned, []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	rec, _ := json.Marshal(map[string]any{"format": 1, "attempt": "planted", "operation": "unit", "owner": "x",
		"keys": []string{live, "./" + live, logpath.CommitKey(0), abandoned}})
	if err := tbl.Bucket.WriteAll(ctx, PlanDir(sp.ID)+intentPrefix+"planted.json", rec, nil); err != nil {
		t.Fatal(err)
	}
	refs := func() map[string]bool {
		m, err := attemptsweep.Referenced(tbl.URL, snap)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if err := deletePlan(ctx, tbl, sp.ID, nil, refs, hclog.NewNullLogger()); err != nil {
		t.Fatal(err)
	}
	keys := tabletest.Keys(t, tbl)
	for _, k := range []string{live, logpath.CommitKey(0)} {
		if !slices.Contains(keys, k) {
			t.Errorf("%s was deleted by the plan's cleanup", k)
		}
	}
	if slices.Contains(keys, abandoned) {
		t.Errorf("the abandoned output %s is still there", abandoned)
	}
}
