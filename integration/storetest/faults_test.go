package storetest

import (
	"flag"
	"strconv"
	"strings"
	"testing"

	"github.com/compactord/compactord/internal/testutil/stores"
)

var (
	faultRates    = flag.String("faults.rates", "0.05,0.20", "comma-separated fault rates of TestFaultInjection")
	faultRuns     = flag.Int("faults.runs", 20, "trials per rate of TestFaultInjection")
	faultParallel = flag.Int("faults.parallel", 4, "trials run at once by TestFaultInjection")
)

// faultFloor is the share of commands that must succeed at each rate.
var faultFloor = map[float64]float64{0.05: 0.95, 0.20: 0.80}

// TestFaultInjection is the acceptance test for transient store faults:
// with every request faulted at the given rate (every kind, uniformly),
// compactions and retention deletes must complete within their own
// retries, and no run may lose or resurrect a row or leave an orphan.
func TestFaultInjection(t *testing.T) {
	ep := stores.RequireEnv(t, stores.EnvS3)
	for _, s := range strings.Split(*faultRates, ",") {
		rate, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			t.Fatalf("-faults.rates: %v", err)
		}
		t.Run(s, func(t *testing.T) {
			figs := FaultTrials(t, ep, rate, *faultRuns, *faultParallel)
			t.Log(figs)
			for i, f := range figs.Failures {
				if i == 10 {
					t.Logf("... %d more", len(figs.Failures)-i)
					break
				}
				t.Logf("failure: %s", f)
			}
			if figs.RowsLost+figs.RowsExtra+figs.Orphans > 0 {
				t.Errorf("damage under faults: %d rows lost, %d extra, %d orphans", figs.RowsLost, figs.RowsExtra, figs.Orphans)
			}
			floor, ok := faultFloor[rate]
			if !ok {
				floor = 0.80
			}
			need := int(floor*float64(figs.Runs) + 0.999)
			if figs.CompactOK < need || figs.ExpireOK < need {
				t.Errorf("at %.0f%% faults: %d and %d of %d compactions and expires completed, want at least %d each",
					rate*100, figs.CompactOK, figs.ExpireOK, figs.Runs, need)
			}
		})
	}
}
