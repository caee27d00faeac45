package clusteradvise_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/clusteradvise"
	"github.com/compactord/compactord/clusteradvise/synth"
)

// change is one key change of a simulated daemon.
type change struct {
	day int
	key string
}

// simulate runs a daemon's daily decision for days days: each day adds 50
// predicates of workload(day) to the evidence, advises on the current
// layout (the whole table clustered on the current key, as incremental
// clustering leaves it) and applies the verdict.
func simulate(t *testing.T, days int, workload func(day int) string, opts clusteradvise.Options) []change {
	t.Helper()
	const rows, perFile = 40_000, 1000
	tbl := synth.NewTable(rows, 1)
	smp := tbl.Sample(3000, 2)
	rec := clusteradvise.NewRecord(0)
	var st clusteradvise.State
	files, err := tbl.Files(nil, perFile)
	if err != nil {
		t.Fatal(err)
	}
	var changes []change
	for day := range days {
		now := epoch.Add(time.Duration(day) * 24 * time.Hour)
		for i, p := range synth.Workload(workload(day), 50, uint64(day)) {
			if err := rec.Add(p, 1, now.Add(-time.Duration(50-i)*time.Minute), clusteradvise.SourcePush); err != nil {
				t.Fatal(err)
			}
		}
		rec.DecayTo(now)
		adv, err := clusteradvise.Advise(clusteradvise.Input{Columns: synth.ColumnMap(), Files: files, TargetFileSize: perFile * synth.RowBytes,
			Current: st.Current, Sample: smp, Evidence: rec}, opts)
		if err != nil {
			t.Fatal(err)
		}
		v := clusteradvise.Decide(adv, st, now, opts)
		st.Pending, st.PendingSince = v.Pending, v.PendingSince
		if !v.Change {
			continue
		}
		st = clusteradvise.State{Current: v.Key, Since: now}
		changes = append(changes, change{day, strings.Join(sorted(v.Key), ",")})
		if files, err = tbl.Files(v.Key, perFile); err != nil {
			t.Fatal(err)
		}
	}
	return changes
}

func TestAShiftOfWorkloadChangesTheKeyOnceAfterTheMargin(t *testing.T) {
	opts := testOptions()
	changes := simulate(t, 90, func(day int) string {
		if day < 45 {
			return synth.WorkloadA
		}
		return synth.WorkloadB
	}, opts)
	t.Logf("changes %v", changes)
	if len(changes) != 2 || changes[0].key != "a" || changes[1].key != "b" || changes[1].day <= 45 {
		t.Fatalf("changes %v, want a at the start and b once after day 45", changes)
	}
	// Not on the first day of the shift: the evidence had to move past the
	// margin first (a week's half-life of a weighs on).
	if changes[1].day == 45 {
		t.Fatalf("changed to b on the day the workload shifted")
	}
}

func TestAnAlternatingWorkloadNeverFlipsTheKeyWithinTheHorizon(t *testing.T) {
	opts := testOptions()
	for _, period := range []int{3, 10} {
		t.Run(fmt.Sprintf("every %d days", period), func(t *testing.T) {
			changes := simulate(t, 120, func(day int) string {
				if (day/period)%2 == 0 {
					return synth.WorkloadA
				}
				return synth.WorkloadB
			}, opts)
			t.Logf("changes %v", changes)
			horizon := int(opts.Horizon.Hours() / 24)
			for i := 1; i < len(changes); i++ {
				if changes[i].day-changes[i-1].day < horizon {
					t.Fatalf("changes %v: %s then %s within %d days", changes, changes[i-1].key, changes[i].key, horizon)
				}
			}
			for i := 2; i < len(changes); i++ {
				if changes[i].key == changes[i-2].key && changes[i].day-changes[i-2].day < 2*horizon {
					t.Fatalf("changes %v: flipped back to %s", changes, changes[i].key)
				}
			}
		})
	}
}
