package storetest

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	deltaactions "github.com/compactord/compactord/delta/actions"
	deltadv "github.com/compactord/compactord/delta/dv"

	"github.com/compactord/compactord/internal/testutil/stores"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/faultproxy"
	"github.com/compactord/compactord/retention"
)

// expireBefore is the retention cutoff of the fault trials: rows of
// compactionTable with col1 < expireBefore expire.
const expireBefore = 10

// FaultFigures is what FaultTrials measured at one fault rate.
type FaultFigures struct {
	Rate float64
	// Runs is the number of trials; each compacts then expires a fresh
	// copy of compactionTable through the proxy.
	Runs int
	// CompactOK and ExpireOK count the commands that returned success.
	CompactOK, ExpireOK int
	// Requests and Faults are the proxy's counts while faults were on.
	Requests int
	Faults   map[faultproxy.Kind]int
	// RowsLost, RowsExtra and Orphans sum the damage over all runs; each
	// must be 0.
	RowsLost, RowsExtra, Orphans int
	// Failures are the errors of failed commands, one line each.
	Failures []string
}

// String is a one-line summary for test logs and reports.
func (f FaultFigures) String() string {
	return fmt.Sprintf("rate %.0f%%: compact %d/%d, expire %d/%d; %d requests, faults %s; rows lost %d, extra %d, orphans %d",
		f.Rate*100, f.CompactOK, f.Runs, f.ExpireOK, f.Runs, f.Requests, faultproxy.FaultsText(f.Faults), f.RowsLost, f.RowsExtra, f.Orphans)
}

// FaultTrials runs `runs` trials against the S3 server at endpoint through
// a fault-injecting proxy that faults `rate` of all requests (every kind,
// uniformly), `parallel` trials at a time. Each trial copies
// compactionTable with faults off, then compacts it and expires
// col1 < expireBefore with faults on, then, with faults off again, checks
// that the live rows are exactly those before (or those minus the expired
// ones when the retention delete committed) and that no object outside the
// log was left unreferenced by it (an orphan).
func FaultTrials(t *testing.T, endpoint string, rate float64, runs, parallel int) FaultFigures {
	t.Helper()
	if err := stores.EnsureS3Bucket(context.Background(), endpoint, stores.Bucket); err != nil {
		t.Fatal(err)
	}
	// The table copies and the checks go to the server directly; only the
	// commands under test go through the proxy.
	proxy := faultproxy.New(t, endpoint, faultproxy.Options{Rate: rate, Delay: 200 * time.Millisecond})
	figs := FaultFigures{Rate: rate, Runs: runs, Faults: map[faultproxy.Kind]int{}}
	var mu sync.Mutex
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for i := 0; i < runs; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			prefix := fmt.Sprintf("tables/%s-%d", stores.TableName(t), i)
			direct := stores.Open(t, stores.S3URL(endpoint, stores.Bucket, prefix))
			stores.CopyTable(t, testutil.DeltaTable(t, compactionTable), direct)
			before, rowsBefore := stores.LiveRows(t, direct)
			objectsBefore := stores.DataObjects(t, direct)

			faulty := stores.Open(t, stores.S3URL(proxy.URL, stores.Bucket, prefix))
			ctx := context.Background()
			_, cerr := compaction.Compact(ctx, faulty, runOptions())
			eres, eerr := retention.Expire(ctx, faulty, retention.Options{
				Column: "col1", EpochUnit: "days", Before: strconv.Itoa(expireBefore), Now: time.Now(),
			})

			after, rowsAfter := stores.LiveRows(t, direct)
			lost, extra := trialDamage(rowsBefore, rowsAfter, eerr == nil && eres.RowsDeleted > 0)
			orphans := Orphans(t, direct, before.Version, after.Version, objectsBefore)

			mu.Lock()
			defer mu.Unlock()
			if cerr == nil {
				figs.CompactOK++
			} else {
				figs.Failures = append(figs.Failures, "compact: "+cerr.Error())
			}
			if eerr == nil {
				figs.ExpireOK++
			} else {
				figs.Failures = append(figs.Failures, "expire: "+eerr.Error())
			}
			figs.RowsLost += lost
			figs.RowsExtra += extra
			figs.Orphans += len(orphans)
			if len(orphans) > 0 {
				t.Errorf("trial %d: orphans %v", i, orphans)
			}
		}()
	}
	wg.Wait()
	figs.Requests, figs.Faults = proxy.Stats()
	return figs
}

// trialDamage compares the rows after a trial with the rows before: they
// must be equal, or equal minus every expired row (col1 < expireBefore)
// when the retention delete committed. mustExpire is set when the delete
// reported success with rows deleted. It returns the rows lost and the rows
// extra against the nearer of the two allowed outcomes.
func trialDamage(before, after stores.Rows, mustExpire bool) (lost, extra int) {
	expired := stores.Rows{}
	for k, c := range before {
		// "part=N;|col1|col2": col1 is the first column value.
		if f := strings.Split(k, "|"); len(f) > 1 {
			if v, err := strconv.Atoi(f[1]); err == nil && v < expireBefore {
				continue
			}
		}
		expired[k] = c
	}
	best := -1
	for i, want := range []stores.Rows{before, expired} {
		if i == 0 && mustExpire {
			continue
		}
		l, e := after.Diff(want)
		if best < 0 || len(l)+len(e) < lost+extra {
			best, lost, extra = i, len(l), len(e)
		}
	}
	return lost, extra
}

// Orphans returns the data and DV objects of tbl that neither existed
// before (objectsBefore) nor are named by an add or remove action of the
// commits after version from up to version to.
func Orphans(t testing.TB, tbl *delta.Table, from, to int64, objectsBefore []string) []string {
	t.Helper()
	known := map[string]bool{}
	for _, k := range objectsBefore {
		known[k] = true
	}
	note := func(path string, dv *deltaactions.DeletionVector) {
		if k, err := deltaactions.DecodePath(path); err == nil {
			known[k] = true
		}
		if dv != nil && dv.StorageType == "u" {
			if k, err := deltadv.DVFileKey(dv.PathOrInlineDv); err == nil {
				known[k] = true
			}
		}
	}
	for v := from + 1; v <= to; v++ {
		actions, err := delta.ReadCommit(context.Background(), tbl, v)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range actions {
			switch {
			case a.Add != nil:
				note(a.Add.Path, a.Add.DeletionVector)
			case a.Remove != nil:
				note(a.Remove.Path, a.Remove.DeletionVector)
			}
		}
	}
	var out []string
	for _, k := range stores.DataObjects(t, tbl) {
		if !known[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
