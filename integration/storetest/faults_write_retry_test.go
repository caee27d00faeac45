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

// faultedWrite is one compaction of a copy of compactionTable on a fake
// S3 behind a fault proxy that answers the requests match accepts with
// kind: the run must commit, keep every row, leave no orphan, and each of
// its outputs must have met at least perOutput faults (else the test
// proves nothing).
type faultedWrite struct {
	name      string
	kind      faultproxy.Kind
	match     func(*http.Request) bool
	perOutput int
	// jobs is the run's MaxConcurrentJobs (0: runOptions').
	jobs int
}

func (w faultedWrite) run(t *testing.T) *compaction.RunResult {
	t.Helper()
	f, p := fakeS3Behind(t, faultproxy.Options{Rate: 1, Kinds: []faultproxy.Kind{w.kind}, Match: w.match})
	direct := stores.Open(t, f.URL(w.name))
	stores.CopyTable(t, testutil.DeltaTable(t, compactionTable), direct)
	before, rowsBefore := stores.LiveRows(t, direct)
	objectsBefore := stores.DataObjects(t, direct)

	faulty := stores.Open(t, stores.S3URL(p.URL, stores.Bucket, w.name))
	ctx := objstore.WithBudget(context.Background(), objstore.NewBudget(objstore.DefaultRunBudget))
	opts := runOptions()
	if w.jobs > 0 {
		opts.Writer.MaxConcurrentJobs = w.jobs
	}
	res, err := compaction.Compact(ctx, faulty, opts)
	if err != nil {
		t.Fatalf("compaction whose outputs' first writes failed (%s): %v", w.kind, err)
	}
	after, rowsAfter := stores.LiveRows(t, direct)
	if lost, extra := rowsAfter.Diff(rowsBefore); len(lost)+len(extra) > 0 {
		t.Fatalf("rows changed: lost %v, extra %v", lost, extra)
	}
	if o := Orphans(t, direct, before.Version, after.Version, objectsBefore); len(o) > 0 {
		t.Fatalf("orphans (landed objects of failed attempts) left behind: %v", o)
	}
	_, faults := p.Stats()
	if faults[w.kind] < w.perOutput*res.FilesAdded || res.FilesAdded == 0 {
		t.Fatalf("%d faults (%s) for %d outputs: the test proves nothing", faults[w.kind], w.kind, res.FilesAdded)
	}
	return res
}

func TestAnOutputWhosePutsFailThreeTimesInARowIsWrittenAgain(t *testing.T) {
	// The S3 SDK sends a PUT at most three times; before the whole-write
	// retry of objstore, three faults in a row on one output's PUT failed
	// the compaction (the ~1/150 flake of TestFaultInjection at 20%).
	res := faultedWrite{name: "retry", kind: faultproxy.InternalError, perOutput: 3,
		match: firstNPerPath(http.MethodPut, ".parquet", "_delta_log", 3)}.run(t)
	t.Logf("%d outputs, each PUT failed 3 times first; committed v%d", res.FilesAdded, res.CommittedVersion)
}

func TestAnOutputTheStoreKeepsRefusingIsWrittenAgainByItsJob(t *testing.T) {
	// Every partition's first 15 output PUTs land but their answers are lost
	// (each job writes one partition's output):
	// the SDK's three attempts times objstore's five whole-write attempts,
	// so the write fails for good and the job fails with it. The job is run
	// again (new keys, which go through), and the landed objects of the
	// failed attempt are deleted with the run's cleanup: no orphan.
	res := faultedWrite{name: "job-retry", kind: faultproxy.LostResponse, perOutput: 15, jobs: 8,
		match: firstNPerDir(http.MethodPut, ".parquet", "_delta_log", 15)}.run(t)
	t.Logf("%d outputs written on their job's second run; committed v%d", res.FilesAdded, res.CommittedVersion)
}
