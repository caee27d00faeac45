package planner

import (
	"fmt"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
)

// TestAPlanThatDoesNothingSaysWhyAsData plans four small files under
// policies that each leave them all alone for one reason, and checks the
// typed skip groups of the plan and of the backlog.
func TestAPlanThatDoesNothingSaysWhyAsData(t *testing.T) {
	now := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	snap := &delta.Snapshot{Version: 7}
	for i := 0; i < 4; i++ {
		snap.Files = append(snap.Files, &actions.Add{
			Path: fmt.Sprintf("f%d.parquet", i), Size: 100,
			// f0 is the oldest: 10 minutes old, the others younger.
			ModificationTime: now.Add(-time.Duration(10-i) * time.Minute).UnixMilli(),
		})
	}
	all := map[string]bool{}
	for _, f := range snap.Files {
		all[f.Path] = true
	}
	for _, tc := range []struct {
		name string
		pol  Policy
		want SkipCode
		// held: the backlog keeps the small files back for the same reason
		// (caps do not hold a backlog back; a big file is not small).
		held bool
	}{
		{"settle window", Policy{SettleWindow: 15 * time.Minute, Now: now}, SkipSettling, true},
		{"alone in their bins", Policy{TargetFileSize: 150, MinFileSize: 120}, SkipSingleFileBin, true},
		{"byte cap", Policy{MaxBytesPerRun: 300}, SkipByteCap, false},
		{"quarantined", Policy{Exclude: all}, SkipQuarantined, true},
		{"nothing small", Policy{MinFileSize: 50}, SkipLargeEnough, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl, err := Plan(snap, tc.pol)
			if err != nil {
				t.Fatal(err)
			}
			if len(pl.Jobs) != 0 || len(pl.Skipped) != 1 {
				t.Fatalf("jobs %d, skipped %+v; want no job and one reason", len(pl.Jobs), pl.Skipped)
			}
			sk := pl.Skipped[0]
			if sk.Code != tc.want || sk.Files != 4 || sk.Bytes != 400 || sk.Reason != tc.want.Text() || sk.Detail == "" {
				t.Fatalf("skip %+v, want %s of 4 files", sk, tc.want)
			}
			if tc.want == SkipSettling {
				if at := now.Add(5 * time.Minute); sk.EligibleAt == nil || !sk.EligibleAt.Equal(at) {
					t.Errorf("eligible at %v, want %v (the oldest file plus the window)", sk.EligibleAt, at)
				}
				// The page and /status write times one way (units.FormatTime).
				if want := "settle window 15m; the first becomes eligible at 2026-01-10 12:05:00Z"; sk.Detail != want {
					t.Errorf("detail %q, want %q", sk.Detail, want)
				}
			} else if sk.EligibleAt != nil {
				t.Errorf("eligible at %v for %s", sk.EligibleAt, sk.Code)
			}
			bl, err := BacklogOf(snap, tc.pol)
			if err != nil {
				t.Fatal(err)
			}
			small := 4
			if tc.want == SkipLargeEnough {
				small = 0
			}
			if bl.SmallFiles != small || bl.MergeableFiles != 0 && tc.want != SkipByteCap {
				t.Errorf("backlog %+v: want %d small files, none mergeable", bl, small)
			}
			switch {
			case tc.held && (len(bl.Held) != 1 || bl.Held[0].Code != tc.want || bl.Held[0].Files != 4 || bl.Held[0].Paths != nil):
				t.Errorf("backlog held %+v, want the 4 files for %s without paths", bl.Held, tc.want)
			case !tc.held && len(bl.Held) != 0:
				t.Errorf("backlog held %+v, want nothing held", bl.Held)
			}
			if tc.want == SkipByteCap && bl.MergeableFiles != 4 {
				t.Errorf("backlog %+v: a cap leaves the files mergeable by later runs", bl)
			}
		})
	}
}
