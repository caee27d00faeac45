package storetest

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/internal/faultproxy"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/objstore"
)

// firstNPerPath returns a Match that accepts the first n requests with
// this method to each URL path containing substr and not containing
// except.
func firstNPerPath(method, substr, except string, n int) func(*http.Request) bool {
	var mu sync.Mutex
	seen := map[string]int{}
	return func(r *http.Request) bool {
		if r.Method != method || !strings.Contains(r.URL.Path, substr) || (except != "" && strings.Contains(r.URL.Path, except)) {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		seen[r.URL.Path]++
		return seen[r.URL.Path] <= n
	}
}

func TestAnOutputWhosePutsFailThreeTimesInARowIsWrittenAgain(t *testing.T) {
	// The S3 SDK sends a PUT at most three times; before the whole-write
	// retry of objstore, three faults in a row on one output's PUT failed
	// the compaction (the ~1/150 flake of TestFaultInjection at 20%).
	f, p := fakeS3Behind(t, faultproxy.Options{Rate: 1, Kinds: []faultproxy.Kind{faultproxy.InternalError},
		Match: firstNPerPath(http.MethodPut, ".parquet", "_delta_log", 3)})
	direct := Open(t, f.URL("retry"))
	CopyTable(t, testutil.DeltaTable(t, compactionTable), direct)
	before, rowsBefore := LiveRows(t, direct)
	objectsBefore := DataObjects(t, direct)

	faulty := Open(t, S3URL(p.URL, Bucket, "retry"))
	ctx := objstore.WithBudget(context.Background(), objstore.NewBudget(objstore.DefaultRunBudget))
	res, err := compaction.Compact(ctx, faulty, runOptions())
	if err != nil {
		t.Fatalf("compaction whose every output PUT failed three times: %v", err)
	}
	after, rowsAfter := LiveRows(t, direct)
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
