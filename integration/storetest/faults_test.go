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

// successesNeeded is how many of runs must succeed at rate: its
// faultFloor, 80% at a rate without one.
func successesNeeded(rate float64, runs int) int {
	floor, ok := faultFloor[rate]
	if !ok {
		floor = 0.80
	}
	return int(floor*float64(runs) + 0.999)
}

// faultRate is one rate of -faults.rates, as written and parsed.
type faultRate struct {
	s    string
	rate float64
}

// faultRateList parses -faults.rates.
func faultRateList(t *testing.T) []faultRate {
	t.Helper()
	var out []faultRate
	for _, s := range strings.Split(*faultRates, ",") {
		rate, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			t.Fatalf("-faults.rates: %v", err)
		}
		out = append(out, faultRate{s, rate})
	}
	return out
}

// logFailures logs the first max failures, then how many more there were.
func logFailures(t *testing.T, failures []string, max int) {
	t.Helper()
	for i, f := range failures {
		if i == max {
			t.Logf("... %d more failures", len(failures)-i)
			return
		}
		t.Logf("failure: %s", f)
	}
}

// TestFaultInjection is the acceptance test for transient store faults:
// with every request faulted at the given rate (every kind, uniformly),
// compactions and retention deletes must complete within their own
// retries, and no run may lose or resurrect a row or leave an orphan.
func TestFaultInjection(t *testing.T) {
	ep := stores.RequireEnv(t, stores.EnvS3)
	for _, fr := range faultRateList(t) {
		rate := fr.rate
		t.Run(fr.s, func(t *testing.T) {
			figs := FaultTrials(t, ep, rate, *faultRuns, *faultParallel)
			t.Log(figs)
			logFailures(t, figs.Failures, 10)
			if figs.RowsLost+figs.RowsExtra+figs.Orphans > 0 {
				t.Errorf("damage under faults: %d rows lost, %d extra, %d orphans", figs.RowsLost, figs.RowsExtra, figs.Orphans)
			}
			need := successesNeeded(rate, figs.Runs)
			if figs.CompactOK < need || figs.ExpireOK < need {
				t.Errorf("at %.0f%% faults: %d and %d of %d compactions and expires completed, want at least %d each",
					rate*100, figs.CompactOK, figs.ExpireOK, figs.Runs, need)
			}
		})
	}
}
