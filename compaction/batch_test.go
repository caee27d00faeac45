package compaction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/tableop"
)

// dayPairs is a table of n partitions with two files each (the binpack
// plan has one job a day) and its ids.
func dayPairs(t *testing.T, n int) (*delta.Table, map[int64]bool) {
	return tabletest.NewDayPairsTable(t, n)
}

// commitsAfter returns the OPTIMIZE commits after version v, oldest
// first, checking each one's invariants.
func commitsAfter(t *testing.T, tbl *delta.Table, v int64) (versions []int64, removes, adds int) {
	t.Helper()
	for ; v < tabletest.Latest(t, tbl).Version; v++ {
		acts := tabletest.Committed(t, tbl, v+1)
		if acts[0].CommitInfo == nil || acts[0].CommitInfo.Operation() != "OPTIMIZE" {
			continue
		}
		rm, ad := checkCompactionCommit(t, acts)
		versions = append(versions, v+1)
		removes += len(rm)
		adds += len(ad)
	}
	return versions, removes, adds
}

func TestBatchedCommits(t *testing.T) {
	// wantBatches is the jobs of each commit, in order.
	tests := []struct {
		name        string
		jobs, every int
		wantBatches []int
	}{
		{name: "one commit at the end by default", jobs: 7, every: 0, wantBatches: []int{7}},
		{name: "every 3 of 7 jobs: 3, 3 and the rest", jobs: 7, every: 3, wantBatches: []int{3, 3, 1}},
		{name: "every job", jobs: 4, every: 1, wantBatches: []int{1, 1, 1, 1}},
		{name: "more than the jobs: one commit", jobs: 3, every: 5, wantBatches: []int{3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			tbl, all := dayPairs(t, tt.jobs)
			before := storeObjects(t, tbl)
			opts := binpackOpts()
			opts.CommitEveryJobs = tt.every
			// One job at a time, so the batches fill in a known order.
			opts.Writer.MaxConcurrentJobs = 1
			res, err := Compact(ctx, tbl, opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.JobsPlanned != tt.jobs || res.JobsCommitted != tt.jobs || res.FilesRemoved != 2*tt.jobs || res.FilesAdded != tt.jobs {
				t.Fatalf("result %+v: want %d jobs committed, %d files removed, %d added", res, tt.jobs, 2*tt.jobs, tt.jobs)
			}
			versions, removes, adds := commitsAfter(t, tbl, 0)
			if res.Commits != len(tt.wantBatches) || !slices.Equal(res.CommittedVersions, versions) || res.CommittedVersion != versions[len(versions)-1] {
				t.Fatalf("result says %d commits %v (last %d), the log holds %v; want %d", res.Commits, res.CommittedVersions, res.CommittedVersion, versions, len(tt.wantBatches))
			}
			if removes != 2*tt.jobs || adds != tt.jobs {
				t.Errorf("the commits remove %d files and add %d, want %d and %d", removes, adds, 2*tt.jobs, tt.jobs)
			}
			for i, v := range versions {
				_, ad := checkCompactionCommit(t, tabletest.Committed(t, tbl, v))
				if len(ad) != tt.wantBatches[i] {
					t.Errorf("commit %d (version %d) adds %d outputs, want %d", i, v, len(ad), tt.wantBatches[i])
				}
				want := "0"
				if tt.every > 0 {
					want = []string{"0", "1", "2", "3"}[i]
				}
				var params struct {
					BatchID string `json:"batchId"`
				}
				if err := json.Unmarshal(tabletest.Committed(t, tbl, v)[0].CommitInfo["operationParameters"], &params); err != nil {
					t.Fatal(err)
				}
				if got := params.BatchID; got != want {
					t.Errorf("commit %d: batchId %v, want %s", i, got, want)
				}
			}
			tabletest.WantIDs(t, tbl, all)
			assertOnlyReferenced(t, tbl, before)
		})
	}
}

// assertOnlyReferenced fails when an object the run wrote is not named by
// any commit, or an object that was there before is gone.
func assertOnlyReferenced(t *testing.T, tbl *delta.Table, before map[string]bool) {
	t.Helper()
	ref := logReferenced(t, tbl)
	after := storeObjects(t, tbl)
	for k := range after {
		if !before[k] && !ref[k] {
			t.Errorf("uncommitted object left behind: %s", k)
		}
	}
	for k := range before {
		if !after[k] {
			t.Errorf("pre-existing object deleted: %s", k)
		}
	}
}

// gatedExecutor runs the jobs one at a time through Local and hands the
// next one over only after the run committed the one before: with a short
// CommitInterval and no count trigger, every job gets its own commit.
type gatedExecutor struct {
	t   *testing.T
	tbl *delta.Table
}

func (g gatedExecutor) Execute(ctx context.Context, w Work, done func(Finished)) error {
	for i := range w.Jobs {
		v := tabletest.Latest(g.t, g.tbl).Version
		sub := w
		sub.Jobs = w.Jobs[i : i+1]
		var f Finished
		if err := (Local{}).Execute(ctx, sub, func(x Finished) { f = x }); err != nil {
			return err
		}
		f.Index = i
		done(f)
		deadline := time.After(time.Minute)
		for tabletest.Latest(g.t, g.tbl).Version == v {
			select {
			case <-ctx.Done():
				return nil
			case <-deadline:
				return fmt.Errorf("job %d was not committed within a minute of finishing", i)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	return nil
}

func TestCommitIntervalCommitsWhatHasFinished(t *testing.T) {
	ctx := context.Background()
	tbl, all := dayPairs(t, 3)
	opts := binpackOpts()
	opts.CommitInterval = 20 * time.Millisecond
	opts.Executor = gatedExecutor{t: t, tbl: tbl}
	res, err := Compact(ctx, tbl, opts)
	if err != nil {
		t.Fatal(err)
	}
	versions, _, _ := commitsAfter(t, tbl, 0)
	if res.Commits != 3 || res.JobsCommitted != 3 || !slices.Equal(versions, []int64{1, 2, 3}) {
		t.Fatalf("result %+v, log commits %v: want one commit per job", res, versions)
	}
	tabletest.WantIDs(t, tbl, all)
}

// A failed batch commit stops the run: the batches before stay committed,
// the failed batch's outputs and those of the jobs after it are deleted.
func TestFailedBatchCommitKeepsEarlierBatches(t *testing.T) {
	ctx := context.Background()
	tbl, all := dayPairs(t, 5)
	before := storeObjects(t, tbl)
	opts := binpackOpts()
	opts.CommitEveryJobs = 2
	opts.Writer.MaxConcurrentJobs = 1
	boom := errors.New("store refused the commit")
	puts := 0
	opts.Commit.BeforePut = func(context.Context, int64) error {
		puts++
		if puts == 2 {
			return boom
		}
		return nil
	}
	res, err := Compact(ctx, tbl, opts)
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want the second batch's commit failure", err)
	}
	if res == nil || res.Commits != 1 || res.JobsCommitted != 2 || res.CommittedVersion != 1 || res.JobsAbandoned != 3 {
		t.Fatalf("result %+v: want batch 1 (2 jobs, version 1) committed, 3 jobs abandoned", res)
	}
	versions, removes, adds := commitsAfter(t, tbl, 0)
	if !slices.Equal(versions, []int64{1}) || removes != 4 || adds != 2 {
		t.Fatalf("log holds commits %v removing %d adding %d, want only batch 1", versions, removes, adds)
	}
	tabletest.WantIDs(t, tbl, all)
	// Batch 2's outputs, and those of the job after it, are gone; the
	// sources of the uncommitted jobs are still there and live.
	assertOnlyReferenced(t, tbl, before)
	if live := len(tabletest.Latest(t, tbl).Files); live != 2*5-4+2 {
		t.Errorf("%d live files, want 8 (6 uncompacted sources, 2 outputs of batch 1)", live)
	}
}

// A DV DELETE on a source of batch 2 that lands after batch 1 committed is
// a winner batch 2 reconciles, like any concurrent one: its deletions are
// remapped onto batch 2's output. Batch 1 is a winner too, one that
// touches none of batch 2's sources.
func TestRaceBatchAgainstDVDeleteAfterTheFirstBatch(t *testing.T) {
	ctx := context.Background()
	tbl, all := dayPairs(t, 4)
	start := tabletest.Latest(t, tbl)
	opts := binpackOpts()
	opts.CommitEveryJobs = 2
	opts.Writer.MaxConcurrentJobs = 1
	var deleted int64 = -1
	puts := 0
	opts.Commit.BeforePut = func(_ context.Context, v int64) error {
		puts++
		if puts != 2 {
			return nil
		}
		// Batch 1 is committed: the sources still live are batch 2's.
		for _, f := range tabletest.Latest(t, tbl).Files {
			if slices.ContainsFunc(start.Files, func(s *actions.Add) bool { return s.Path == f.Path }) {
				deleted = tabletest.FileIDs(t, tbl, f)[3]
				tabletest.DeleteIDs(t, tbl, deleted)
				return nil
			}
		}
		t.Errorf("no source of the plan is live before batch 2's commit")
		return nil
	}
	res, err := Compact(ctx, tbl, opts)
	if err != nil {
		t.Fatal(err)
	}
	if deleted < 0 {
		t.Fatal("the delete never ran")
	}
	if res.Commits != 2 || !slices.Equal(res.CommittedVersions, []int64{1, 3}) || res.JobsCommitted != 4 || res.JobsDropped != 0 {
		t.Fatalf("result %+v: want batches at versions 1 and 3 (the delete at 2), every job committed", res)
	}
	if len(res.Reconciled) != 1 || res.Reconciled[0].WinnerVersion != 2 || res.Reconciled[0].RowsRemapped != 1 {
		t.Fatalf("reconciled %+v, want the delete's one row at version 2", res.Reconciled)
	}
	if res.Conflicts["dvUpdateReconciled"] != 1 || res.Conflicts["noConflict"] != 1 {
		t.Errorf("conflicts %v: want one reconciled winner (the delete) and one without conflict (batch 1)", res.Conflicts)
	}
	delete(all, deleted)
	tabletest.WantIDs(t, tbl, all)
	// Batch 2's commit carries the remapped DV on its output.
	_, adds := checkCompactionCommit(t, tabletest.Committed(t, tbl, 3))
	if dvs := len(slices.DeleteFunc(adds, func(a *actions.Add) bool { return a.DeletionVector == nil })); dvs != 1 {
		t.Errorf("batch 2 adds %d outputs with a DV, want 1", dvs)
	}
}

// The daemon's path: a policy's commit_every_jobs reaches the run through
// the factory, and the operation's report counts the commits.
func TestThePolicyBatchesTheDaemonsRun(t *testing.T) {
	tbl, all := dayPairs(t, 4)
	p := policies.DefaultPolicy()
	p.Strategy = policies.StrategyBinpack
	p.SettleWindow = 0
	p.CommitEveryJobs = 2
	p.CommitInterval = time.Hour
	op, ok, err := Factory(RunOptions{}).New(p, tableop.Env{EngineInfo: "compactord/test"})
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	o := op.(*Op).Options
	if o.CommitEveryJobs != 2 || o.CommitInterval != time.Hour {
		t.Fatalf("run options commit every %d jobs / %v, want the policy's 2 / 1h", o.CommitEveryJobs, o.CommitInterval)
	}
	// A template's own setting (a flag) wins over the policy's.
	if o := OptionsFor(p, tableop.Env{}, RunOptions{CommitEveryJobs: 5}); o.CommitEveryJobs != 5 || o.CommitInterval != time.Hour {
		t.Fatalf("template 5: got %d / %v", o.CommitEveryJobs, o.CommitInterval)
	}
	res, err := op.Run(context.Background(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts[CountCommits] != 2 || res.Version != 2 || !res.Committed || res.Counts[CountJobsCommitted] != 4 {
		t.Fatalf("report %+v: want 2 commits, 4 jobs, version 2", res)
	}
	tabletest.WantIDs(t, tbl, all)
}

// On a row-tracking table every batch keeps the stable row ids and gives
// its outputs fresh baseRowId ranges: batch 2 meets batch 1 as a winner and
// starts above batch 1's high-water mark.
func TestBatchesGetFreshRowIDRanges(t *testing.T) {
	tbl := rowTrackingTable(t, tabletest.LayoutPartitioned)
	opts := binpackOpts()
	opts.CommitEveryJobs = 1
	opts.Writer.MaxConcurrentJobs = 1
	before, snap := tabletest.StableIDs(t, tbl)
	res, err := Compact(context.Background(), tbl, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Commits != 2 || len(res.CommittedVersions) != 2 {
		t.Fatalf("result %+v: want one commit per partition", res)
	}
	tabletest.WantStableIDs(t, tbl, before)
	first := res.CommittedVersions[0]
	tabletest.CheckRowTrackingCommit(t, tbl, first, snap, -1)
	hwm, ok, err := delta.RowTrackingHighWaterMark(tabletest.Committed(t, tbl, first))
	if err != nil || !ok {
		t.Fatalf("batch 1 sets no high-water mark: %v", err)
	}
	tabletest.CheckRowTrackingCommit(t, tbl, res.CommittedVersions[1], snap, hwm)
}

// misbehaving reports job 0 twice (and an index out of range), never job
// 1, and then fails itself.
type misbehaving struct{ err error }

func (m misbehaving) Execute(ctx context.Context, w Work, done func(Finished)) error {
	sub := w
	sub.Jobs = w.Jobs[:1]
	var f Finished
	if err := (Local{}).Execute(ctx, sub, func(x Finished) { f = x }); err != nil {
		return err
	}
	done(f)
	done(f)
	done(Finished{Index: len(w.Jobs), Err: errors.New("no such job")})
	return m.err
}

// The run holds an executor to its contract: a job reported twice is
// committed once, an unknown index is ignored, a job never reported
// counts as failed, and the executor's own error is the run's.
func TestTheRunHoldsAnExecutorToItsContract(t *testing.T) {
	tbl, _ := dayPairs(t, 2)
	opts := binpackOpts()
	lost := errors.New("launcher lost")
	opts.Executor = misbehaving{err: lost}
	res, err := Compact(context.Background(), tbl, opts)
	if !errors.Is(err, lost) {
		t.Fatalf("err %v, want the executor's", err)
	}
	if res == nil || res.JobsCommitted != 1 || res.JobsFailed != 1 || res.Commits != 1 || res.FilesRemoved != 2 {
		t.Fatalf("result %+v: want job 0 committed once, job 1 failed", res)
	}
	if live := len(tabletest.Latest(t, tbl).Files); live != 3 {
		t.Errorf("%d live files, want 3 (job 0's output, job 1's two sources)", live)
	}
}

// A run's batches read each version of the log once: a later batch catches
// up from the run's read snapshot through the versions the earlier ones
// read or committed, without reading them from the store again. Version 1
// (batch 1's commit) is made unreadable once batch 2 has caught up past it
// and restored before the end, so batch 3 commits only if it does not read
// it again.
func TestBatchesReadEachVersionOfTheLogOnce(t *testing.T) {
	ctx := context.Background()
	tbl, all := dayPairs(t, 3)
	opts := binpackOpts()
	opts.CommitEveryJobs = 1
	opts.Writer.MaxConcurrentJobs = 1
	key := logpath.CommitKey(1)
	var saved []byte
	puts := 0
	opts.Commit.BeforePut = func(_ context.Context, v int64) error {
		puts++
		switch puts {
		case 2: // batch 2 has read version 1: hide it from the store
			b, err := tbl.Bucket.ReadAll(ctx, key)
			if err != nil {
				return err
			}
			saved = b
			return tbl.Bucket.WriteAll(ctx, key, []byte("not a commit\n"), nil)
		case 3: // batch 3 has caught up: put version 1 back
			return tbl.Bucket.WriteAll(ctx, key, saved, nil)
		}
		return nil
	}
	res, err := Compact(ctx, tbl, opts)
	if saved != nil && puts < 3 {
		_ = tbl.Bucket.WriteAll(ctx, key, saved, nil)
	}
	if err != nil {
		t.Fatalf("batched run whose version 1 became unreadable after it was read: %v", err)
	}
	if res.Commits != 3 || !slices.Equal(res.CommittedVersions, []int64{1, 2, 3}) {
		t.Fatalf("result %+v: want 3 batches at versions 1, 2 and 3", res)
	}
	tabletest.WantIDs(t, tbl, all)
}
