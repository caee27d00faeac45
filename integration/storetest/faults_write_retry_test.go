package storetest

import (
	"context"
	"net/http"
	"path"
	"strings"
	"sync"
	"testing"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/faultproxy"
	"github.com/compactord/compactord/internal/testutil/stores"
	"github.com/compactord/compactord/objstore"
)

// firstNPerPath returns a Match that accepts the first n requests with
// this method to each URL path containing substr and not containing
// except.
func firstNPerPath(method, substr, except string, n int) func(*http.Request) bool {
	return firstNPer(method, substr, except, n, func(p string) string { return p })
}

// firstNPerDir is firstNPerPath counting per directory of the path.
func firstNPerDir(method, substr, except string, n int) func(*http.Request) bool {
	return firstNPer(method, substr, except, n, path.Dir)
}

func firstNPer(method, substr, except string, n int, key func(string) string) func(*http.Request) bool {
	var mu sync.Mutex
	seen := map[string]int{}
	return func(r *http.Request) bool {
		if r.Method != method || !strings.Contains(r.URL.Path, substr) || (except != "" && strings.Contains(r.URL.Path, except)) {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		k := key(r.URL.Path)
		seen[k]++
		return seen[k] <= n
	}
}

func TestAnOutputWhosePutsFailThreeTimesInARowIsWrittenAgain(t *testing.T) {
	// The S3 SDK sends a PUT at most three times; before the whole-write
	// retry of objstore, three faults in a row on one output's PUT failed
	// the compaction (the ~1/150 flake of TestFaultInjection at 20%).
	f, p := fakeS3Behind(t, faultproxy.Options{Rate: 1, Kinds: []faultproxy.Kind{faultproxy.InternalError},
		Match: firstNPerPath(http.MethodPut, ".parquet", "_delta_log", 3)})
	direct := stores.Open(t, f.URL("retry"))
	stores.CopyTable(t, testutil.DeltaTable(t, compactionTable), direct)
	before, rowsBefore := stores.LiveRows(t, direct)
	objectsBefore := stores.DataObjects(t, direct)

	faulty := stores.Open(t, stores.S3URL(p.URL, stores.Bucket, "retry"))
	ctx := objstore.WithBudget(context.Background(), objstore.NewBudget(objstore.DefaultRunBudget))
	res, err := compaction.Compact(ctx, faulty, runOptions())
	if err != nil {
		t.Fatalf("compaction whose every output PUT failed three times: %v", err)
	}
	after, rowsAfter := stores.LiveRows(t, direct)
	if lost, extra := rowsAfter.Diff(rowsBefore); len(lost)+len(extra) > 0 {
		t.Fatalf("rows changed: lost %v, extra %v", lost, extra)
	}
	if o := Orphans(t, direct, before.Version, after.Version, objectsBefore); len(o) > 0 {
		t.Fatalf("orphans %v", o)
	}
	_, faults := p.Stats()
	if faults[faultproxy.InternalError] < 3*res.FilesAdded || res.FilesAdded == 0 {
		t.Fatalf("%d faults for %d outputs: the test proves nothing", faults[faultproxy.InternalError], res.FilesAdded)
	}
	t.Logf("%d outputs, each PUT failed 3 times first; committed v%d", res.FilesAdded, res.CommittedVersion)
}

func TestAnOutputTheStoreKeepsRefusingIsWrittenAgainByItsJob(t *testing.T) {
	// Every partition's first 15 output PUTs land but their answers are lost
	// (each job writes one partition's output):
	// the SDK's three attempts times objstore's five whole-write attempts,
	// so the write fails for good and the job fails with it. The job is run
	// again (new keys, which go through), and the landed objects of the
	// failed attempt are deleted with the run's cleanup: no orphan.
	f, p := fakeS3Behind(t, faultproxy.Options{Rate: 1, Kinds: []faultproxy.Kind{faultproxy.LostResponse},
		Match: firstNPerDir(http.MethodPut, ".parquet", "_delta_log", 15)})
	direct := stores.Open(t, f.URL("job-retry"))
	stores.CopyTable(t, testutil.DeltaTable(t, compactionTable), direct)
	before, rowsBefore := stores.LiveRows(t, direct)
	objectsBefore := stores.DataObjects(t, direct)

	faulty := stores.Open(t, stores.S3URL(p.URL, stores.Bucket, "job-retry"))
	ctx := objstore.WithBudget(context.Background(), objstore.NewBudget(objstore.DefaultRunBudget))
	opts := runOptions()
	opts.Writer.MaxConcurrentJobs = 8
	res, err := compaction.Compact(ctx, faulty, opts)
	if err != nil {
		t.Fatalf("compaction whose outputs' first writes all failed: %v", err)
	}
	after, rowsAfter := stores.LiveRows(t, direct)
	if lost, extra := rowsAfter.Diff(rowsBefore); len(lost)+len(extra) > 0 {
		t.Fatalf("rows changed: lost %v, extra %v", lost, extra)
	}
	if o := Orphans(t, direct, before.Version, after.Version, objectsBefore); len(o) > 0 {
		t.Fatalf("the failed attempts' landed outputs were left behind: %v", o)
	}
	_, faults := p.Stats()
	if faults[faultproxy.LostResponse] < 15*res.FilesAdded || res.FilesAdded == 0 {
		t.Fatalf("%d lost answers for %d outputs: the test proves nothing", faults[faultproxy.LostResponse], res.FilesAdded)
	}
	t.Logf("%d outputs written on their job's second run; committed v%d", res.FilesAdded, res.CommittedVersion)
}
