package storetest

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/compactord/compactord/checkpoint"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/testutil/faultproxy"
	"github.com/compactord/compactord/internal/testutil/stores"
	"github.com/compactord/compactord/logcleanup"
	"github.com/compactord/compactord/objstore"
	"github.com/compactord/compactord/statsbackfill"
	"github.com/compactord/compactord/vacuum"
)

var maintRuns = flag.Int("faults.maint.runs", 20, "trials per operation and rate of TestMaintenanceUnderFaults")

// maintOp is one maintenance operation of the fault trials: run is called
// through the faulty handle, check with the direct one after every run
// (err is run's error) and returns what it found wrong.
type maintOp struct {
	name  string
	run   func(ctx context.Context, faulty *delta.Table, mt *maintTable) error
	check func(ctx context.Context, direct *delta.Table, mt *maintTable, logBefore []string, err error) []string
}

func maintOps() []maintOp {
	vac := func(mode vacuum.Mode) maintOp {
		return maintOp{
			name: "vacuum-" + string(mode),
			run: func(ctx context.Context, faulty *delta.Table, mt *maintTable) error {
				_, err := vacuum.Run(ctx, faulty, vacuum.Options{Mode: mode, EngineInfo: "compactord/storetest",
					Now: func() time.Time { return mt.built.Add(maintVacuumAt) }})
				return err
			},
			check: func(ctx context.Context, direct *delta.Table, mt *maintTable, logBefore []string, err error) []string {
				var out []string
				for _, k := range missingKeys(ctx, direct, mt.keep) {
					out = append(out, "deleted what the window needs: "+k)
				}
				for _, k := range missingKeys(ctx, direct, logBefore) {
					out = append(out, "deleted a log file: "+k)
				}
				out = append(out, readableVersions(ctx, direct, mt.readableFrom, mt.latest, mt.rows)...)
				latest, lerr := delta.LoadSnapshot(ctx, direct, -1)
				if lerr != nil {
					out = append(out, "latest unreadable: "+lerr.Error())
				} else if rows, _, rerr := rowsAt(ctx, direct, latest.Version); rerr != nil {
					out = append(out, "latest unreadable: "+rerr.Error())
				} else if lost, extra := rows.Diff(mt.rows); len(lost)+len(extra) > 0 {
					out = append(out, fmt.Sprintf("latest version %d: %d rows lost, %d extra", latest.Version, len(lost), len(extra)))
				}
				if err == nil {
					gone := mt.expired
					if mode == vacuum.Full {
						gone = append(append([]string(nil), gone...), mt.orphans...)
					}
					for _, k := range presentKeys(ctx, direct, gone) {
						out = append(out, "a successful vacuum left "+k)
					}
				}
				return out
			},
		}
	}
	return []maintOp{
		vac(vacuum.Lite),
		vac(vacuum.Full),
		{
			name: "checkpoint",
			run: func(ctx context.Context, faulty *delta.Table, mt *maintTable) error {
				_, err := checkpoint.Write(ctx, faulty, -1, checkpoint.Options{})
				return err
			},
			check: func(ctx context.Context, direct *delta.Table, mt *maintTable, logBefore []string, err error) []string {
				var out []string
				for _, k := range missingKeys(ctx, direct, append(append([]string(nil), mt.keep...), logBefore...)) {
					out = append(out, "checkpoint lost "+k)
				}
				out = append(out, readableVersions(ctx, direct, 0, mt.latest, mt.rows)...)
				if err == nil {
					if ok, xerr := direct.Bucket.Exists(ctx, logpath.CheckpointKey(mt.latest)); xerr != nil || !ok {
						out = append(out, fmt.Sprintf("a successful checkpoint left no %s (%v)", logpath.CheckpointKey(mt.latest), xerr))
					}
				}
				return out
			},
		},
		{
			name: "log-cleanup",
			run: func(ctx context.Context, faulty *delta.Table, mt *maintTable) error {
				_, err := logcleanup.Cleanup(ctx, faulty, logcleanup.Options{Now: func() time.Time { return mt.built.Add(maintCleanupAt) }})
				return err
			},
			check: func(ctx context.Context, direct *delta.Table, mt *maintTable, logBefore []string, err error) []string {
				var out []string
				for _, k := range missingKeys(ctx, direct, append(append([]string(nil), mt.keep...), mt.logKept...)) {
					out = append(out, "log cleanup deleted what it keeps: "+k)
				}
				out = append(out, readableVersions(ctx, direct, maintBoundary, mt.latest, mt.rows)...)
				left := presentKeys(ctx, direct, mt.logBelow)
				switch {
				case err == nil && len(left) > 0:
					out = append(out, fmt.Sprintf("a successful log cleanup left %v", left))
				case err != nil && strings.Contains(err.Error(), "nothing deleted") && len(left) != len(mt.logBelow):
					out = append(out, fmt.Sprintf("log cleanup said nothing deleted and deleted %d of %d: %v", len(mt.logBelow)-len(left), len(mt.logBelow), err))
				}
				return out
			},
		},
		{
			name: "stats-backfill",
			run: func(ctx context.Context, faulty *delta.Table, mt *maintTable) error {
				_, err := statsbackfill.Run(ctx, faulty, statsbackfill.Options{EngineInfo: "compactord/storetest"})
				return err
			},
			check: func(ctx context.Context, direct *delta.Table, mt *maintTable, logBefore []string, err error) []string {
				var out []string
				for _, k := range missingKeys(ctx, direct, append(append([]string(nil), mt.keep...), logBefore...)) {
					out = append(out, "stats backfill lost "+k)
				}
				snap, lerr := delta.LoadSnapshot(ctx, direct, -1)
				if lerr != nil {
					return append(out, "latest unreadable: "+lerr.Error())
				}
				out = append(out, readableVersions(ctx, direct, 0, snap.Version, mt.rows)...)
				need, eerr := statsbackfill.Expected(snap)
				if eerr != nil {
					return append(out, eerr.Error())
				}
				live := map[string]bool{}
				for _, k := range mt.keep {
					live[k] = true
				}
				for _, a := range snap.Files {
					k, _ := actions.DecodePath(a.Path)
					if !live[k] {
						out = append(out, "a live file that was not live before: "+a.Path)
					}
					if a.Stats == "" {
						if err == nil {
							out = append(out, "a successful backfill left no stats on "+a.Path)
						}
						continue
					}
					if err == nil && statsbackfill.Missing(a, need) > 0 {
						out = append(out, "a successful backfill left partial stats on "+a.Path)
					}
					want, _, cerr := statsbackfill.Compute(ctx, direct, snap, a)
					if cerr != nil {
						out = append(out, "compute stats of "+a.Path+": "+cerr.Error())
					} else if isNoStats(mt, a.Path) && a.Stats != want {
						out = append(out, fmt.Sprintf("stats of %s are %s, want %s", a.Path, a.Stats, want))
					}
				}
				return out
			},
		},
	}
}

func isNoStats(mt *maintTable, path string) bool {
	for _, p := range mt.noStats {
		if p == path {
			return true
		}
	}
	return false
}

// maintFigures is what the trials of one operation at one rate measured.
type maintFigures struct {
	op       string
	rate     float64
	runs, ok int
	requests int
	faults   map[faultproxy.Kind]int
	problems []string
	failures []string
}

func (f maintFigures) String() string {
	return fmt.Sprintf("%s at %.0f%%: %d/%d succeeded; %d requests, faults %s; %d problems",
		f.op, f.rate*100, f.ok, f.runs, f.requests, faultproxy.FaultsText(f.faults), len(f.problems))
}

// maintTrials runs op `runs` times on fresh tables behind a proxy faulting
// rate of the requests, `parallel` at a time, each with a run's retry
// budget as the commands give it.
func maintTrials(t *testing.T, endpoint string, op maintOp, rate float64, runs, parallel int) maintFigures {
	t.Helper()
	if err := stores.EnsureS3Bucket(context.Background(), endpoint, stores.Bucket); err != nil {
		t.Fatal(err)
	}
	proxy := faultproxy.New(t, endpoint, faultproxy.Options{Rate: rate, Delay: 200 * time.Millisecond})
	figs := maintFigures{op: op.name, rate: rate, runs: runs}
	var mu sync.Mutex
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for i := 0; i < runs; i++ {
		// Tables are built here, on the test's goroutine (their helpers
		// fail the test), and the trials run concurrently.
		prefix := fmt.Sprintf("tables/%s-%d", stores.TableName(t), i)
		direct := stores.Open(t, stores.S3URL(endpoint, stores.Bucket, prefix))
		mt := buildMaintTable(t, direct.URL)
		ctx := context.Background()
		logBefore, err := logKeys(ctx, direct)
		if err != nil {
			t.Fatal(err)
		}
		faulty := stores.Open(t, stores.S3URL(proxy.URL, stores.Bucket, prefix))
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			rctx := objstore.WithBudget(ctx, objstore.NewBudget(objstore.DefaultRunBudget))
			rerr := op.run(rctx, faulty, mt)
			problems := op.check(ctx, direct, mt, logBefore, rerr)
			mu.Lock()
			defer mu.Unlock()
			if rerr == nil {
				figs.ok++
			} else {
				figs.failures = append(figs.failures, rerr.Error())
			}
			for _, p := range problems {
				figs.problems = append(figs.problems, fmt.Sprintf("trial %d (%v): %s", i, rerr, p))
			}
		}()
	}
	wg.Wait()
	figs.requests, figs.faults = proxy.Stats()
	return figs
}

// TestMaintenanceUnderFaults is the acceptance test for store faults during
// the maintenance operations: vacuum (lite and full), checkpoint, log
// cleanup and the stats backfill each run on fresh tables with every
// request faulted at the given rate (every kind the proxy injects). At
// least 95% (5% faults) or 80% (20%) of each operation's runs must
// succeed, and after every run, successful or not, nothing a version inside
// the retention window needs may be gone and every such version must read;
// a successful run must have deleted all it should.
func TestMaintenanceUnderFaults(t *testing.T) {
	ep := stores.RequireEnv(t, stores.EnvS3)
	for _, fr := range faultRateList(t) {
		rate := fr.rate
		for _, op := range maintOps() {
			t.Run(op.name+"/"+fr.s, func(t *testing.T) {
				figs := maintTrials(t, ep, op, rate, *maintRuns, *faultParallel)
				t.Log(figs)
				logFailures(t, figs.failures, 5)
				for _, p := range figs.problems {
					t.Errorf("damage: %s", p)
				}
				if need := successesNeeded(rate, figs.runs); figs.ok < need {
					t.Errorf("%s at %.0f%% faults: %d of %d runs succeeded, want at least %d", op.name, rate*100, figs.ok, figs.runs, need)
				}
			})
		}
	}
}

// TestMaintenanceTableWithoutFaults checks the trials' table and checks on
// their own: each operation succeeds without faults and the checks find
// nothing wrong, and a run that deletes too much is caught.
func TestMaintenanceTableWithoutFaults(t *testing.T) {
	ep := stores.RequireEnv(t, stores.EnvS3)
	if err := stores.EnsureS3Bucket(context.Background(), ep, stores.Bucket); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, op := range maintOps() {
		t.Run(op.name, func(t *testing.T) {
			direct := stores.Open(t, stores.S3URL(ep, stores.Bucket, "tables/"+stores.TableName(t)))
			mt := buildMaintTable(t, direct.URL)
			logBefore, err := logKeys(ctx, direct)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("keep %d keys, expired %v, orphans %v, readable from v%d, log below boundary %d", len(mt.keep), mt.expired, mt.orphans, mt.readableFrom, len(mt.logBelow))
			if err := op.run(ctx, direct, mt); err != nil {
				t.Fatal(err)
			}
			if p := op.check(ctx, direct, mt, logBefore, nil); len(p) > 0 {
				t.Fatalf("without faults: %v", p)
			}
			// Deleting one key a version inside the window needs must be
			// caught.
			if err := direct.Bucket.Delete(ctx, mt.keep[0]); err != nil {
				t.Fatal(err)
			}
			if p := op.check(ctx, direct, mt, logBefore, nil); len(p) == 0 {
				t.Fatalf("the check missed the deletion of %s", mt.keep[0])
			}
		})
	}
}
