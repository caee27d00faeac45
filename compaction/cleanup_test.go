package compaction

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/planner"
)

// storeObjects lists every object outside _delta_log/.
func storeObjects(t testing.TB, tbl *delta.Table) map[string]bool {
	return tabletest.StoreObjects(t, tbl)
}

// logReferenced returns every object key a commit of the table names.
func logReferenced(t testing.TB, tbl *delta.Table) map[string]bool {
	return tabletest.LogReferenced(t, tbl)
}

var cleanedRE = regexp.MustCompile(`deleted uncommitted outputs: .*objects=(\d+)`)

// Every exit path of a compaction run deletes exactly the objects it wrote
// and did not commit: afterwards no object the run wrote is left that no
// commit references, every object that existed before (or that a
// concurrent writer committed) is still there, and the committed table
// reads the right rows.
func TestEveryExitPathDeletesExactlyTheUncommittedObjects(t *testing.T) {
	type scenario struct {
		name string
		// setup prepares the table and options after the run was planned;
		// it returns the rows the table must hold afterwards.
		setup       func(t *testing.T, tbl *delta.Table, opts *RunOptions, cancel context.CancelFunc, files [][]int64, pl *planner.CompactionPlan) map[int64]bool
		wantErr     func(error) bool
		wantCommit  bool
		wantCleaned bool // the run wrote objects it did not commit
	}
	find := func(t *testing.T, tbl *delta.Table, path string) *actions.Add {
		for _, f := range tabletest.Latest(t, tbl).Files {
			if f.Path == path {
				return f
			}
		}
		t.Fatalf("no live file %s", path)
		return nil
	}
	scenarios := []scenario{
		{
			name: "a job whose rewrite fails (a source object vanished)",
			setup: func(t *testing.T, tbl *delta.Table, opts *RunOptions, _ context.CancelFunc, files [][]int64, pl *planner.CompactionPlan) map[int64]bool {
				// Job 1's second source is gone; with an output per source,
				// the first one's output has landed when the read fails.
				pl.Jobs[1].TargetFileSize = 1
				k, _ := find(t, tbl, pl.Jobs[1].SourcePaths[1]).Key()
				if err := tbl.Bucket.Delete(context.Background(), k); err != nil {
					t.Fatal(err)
				}
				return nil // the vanished file's rows cannot be read back
			},
			wantErr:     func(err error) bool { return err != nil && strings.Contains(err.Error(), "failed to rewrite") },
			wantCommit:  true,
			wantCleaned: true,
		},
		{
			name: "a job dropped for a conflict (copy-on-write winner)",
			setup: func(t *testing.T, tbl *delta.Table, opts *RunOptions, _ context.CancelFunc, files [][]int64, pl *planner.CompactionPlan) map[int64]bool {
				victim := tabletest.FileIDs(t, tbl, find(t, tbl, pl.Jobs[0].SourcePaths[0]))[3]
				opts.Commit.BeforePut = tabletest.Once(func(int64) { tabletest.CowDelete(t, tbl, victim) })
				want := tabletest.IDSet(files...)
				delete(want, victim)
				return want
			},
			wantErr:     func(err error) bool { return err == nil },
			wantCommit:  true,
			wantCleaned: true,
		},
		{
			name: "two lost races, each reconciled with a new output DV",
			setup: func(t *testing.T, tbl *delta.Table, opts *RunOptions, _ context.CancelFunc, files [][]int64, pl *planner.CompactionPlan) map[int64]bool {
				opts.Commit.BeforePut = tabletest.DeletesBeforePuts(t, tbl, nil, 3, 140)
				want := tabletest.IDSet(files...)
				delete(want, 3)
				delete(want, 140)
				return want
			},
			wantErr:     func(err error) bool { return err == nil },
			wantCommit:  true,
			wantCleaned: true, // the first retry's DV file
		},
		{
			name: "a commit that fails (the log store refuses the put)",
			setup: func(t *testing.T, tbl *delta.Table, opts *RunOptions, _ context.CancelFunc, files [][]int64, pl *planner.CompactionPlan) map[int64]bool {
				opts.Commit.BeforePut = func(context.Context, int64) error { return errors.New("injected: log store unavailable") }
				return tabletest.IDSet(files...)
			},
			wantErr:     func(err error) bool { return err != nil && strings.Contains(err.Error(), "injected") },
			wantCleaned: true,
		},
		{
			name: "a commit that fails after a lost race reconciled a DV",
			setup: func(t *testing.T, tbl *delta.Table, opts *RunOptions, _ context.CancelFunc, files [][]int64, pl *planner.CompactionPlan) map[int64]bool {
				calls := 0
				opts.Commit.BeforePut = func(context.Context, int64) error {
					calls++
					if calls == 1 {
						tabletest.DeleteIDs(t, tbl, 7)
						return nil
					}
					return errors.New("injected: log store unavailable")
				}
				want := tabletest.IDSet(files...)
				delete(want, 7)
				return want
			},
			wantErr:     func(err error) bool { return err != nil && strings.Contains(err.Error(), "injected") },
			wantCleaned: true,
		},
		{
			name: "a lost race whose reconciled DV file lands and then fails at close",
			setup: func(t *testing.T, tbl *delta.Table, opts *RunOptions, _ context.CancelFunc, files [][]int64, pl *planner.CompactionPlan) map[int64]bool {
				calls := 0
				opts.Commit.BeforePut = func(context.Context, int64) error {
					if calls++; calls == 1 {
						tabletest.DeleteIDs(t, tbl, 7)
						// The winner's DV is in; the run's remapped one fails.
						tabletest.FailClosesAfterLanding(t, tbl, "deletion_vector_")
					}
					return nil
				}
				want := tabletest.IDSet(files...)
				delete(want, 7)
				return want
			},
			wantErr:     func(err error) bool { return errors.Is(err, tabletest.ErrClosedAfterLanding) },
			wantCleaned: true,
		},
		{
			name: "a context canceled right before the put",
			setup: func(t *testing.T, tbl *delta.Table, opts *RunOptions, cancel context.CancelFunc, files [][]int64, pl *planner.CompactionPlan) map[int64]bool {
				opts.Commit.BeforePut = func(ctx context.Context, _ int64) error { cancel(); return ctx.Err() }
				return tabletest.IDSet(files...)
			},
			wantErr:     func(err error) bool { return errors.Is(err, context.Canceled) },
			wantCleaned: true,
		},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var logs bytes.Buffer
			opts := binpackOpts()
			opts.Logger = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
			tbl, files, pl := twoJobTable(t, &opts)
			want := sc.setup(t, tbl, &opts, cancel, files, pl)
			before := storeObjects(t, tbl)

			res, err := RunPlan(ctx, tbl, pl, opts)
			if !sc.wantErr(err) {
				t.Fatalf("RunPlan = %+v, %v", res, err)
			}
			if committed := res != nil && res.CommittedVersion >= 0; committed != sc.wantCommit {
				t.Fatalf("committed = %v (result %+v), want %v", committed, res, sc.wantCommit)
			}
			after := storeObjects(t, tbl)
			ref := logReferenced(t, tbl)
			for k := range before {
				if !after[k] {
					t.Errorf("object %s existed before the run and is gone", k)
				}
			}
			wrote := 0
			for k := range after {
				if before[k] {
					continue
				}
				if !ref[k] {
					t.Errorf("object %s was left behind: no commit references it", k)
				}
				wrote++
			}
			if sc.wantCommit && wrote == 0 {
				t.Error("the run committed but no new object is on the store")
			}
			m := cleanedRE.FindStringSubmatch(logs.String())
			cleaned := 0
			if m != nil {
				cleaned, _ = strconv.Atoi(m[1])
			}
			if sc.wantCleaned && cleaned == 0 {
				t.Errorf("the run cleaned no uncommitted object; log:\n%s", logs.String())
			}
			if want != nil {
				tabletest.WantIDs(t, tbl, want)
			}
		})
	}
}

// A run that gives up after a put with an unknown outcome keeps the outputs
// that put referenced: here it lands after the run returned, and the
// committed version must find its files.
func TestGivingUpAfterAnAmbiguousPutKeepsItsOutputs(t *testing.T) {
	ctx := context.Background()
	files := [][]int64{tabletest.IDRange(0, 20), tabletest.IDRange(20, 20)}
	tbl := tabletest.NewTable(t, "file://"+t.TempDir(), files...)
	late := &tabletest.LandsLate{LogStore: tbl.Log}
	tbl.Log = late
	opts := binpackOpts()
	opts.Commit.MaxAttempts = 1
	if _, err := Compact(ctx, tbl, opts); !errors.Is(err, commit.ErrTooManyAttempts) {
		t.Fatalf("Compact = %v, want it to give up after the unknown outcome", err)
	}
	if err := late.Land(ctx); err != nil {
		t.Fatal(err)
	}
	if v := tabletest.Latest(t, tbl).Version; v != 1 {
		t.Fatalf("table at version %d, want the late compaction at 1", v)
	}
	tabletest.WantIDs(t, tbl, tabletest.IDSet(files...))
}
