package runner

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/props"
	"github.com/compactord/compactord/delta/stats"
	"github.com/compactord/compactord/planner"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/scheduler"
)

// sizedTable is a table of files of the given sizes, all written well
// before now (outside any settle window), with delta.targetFileSize set
// when target is not empty.
func sizedTable(target string, now time.Time, sizes ...int64) *delta.Snapshot {
	conf := map[string]string{}
	if target != "" {
		conf[props.PropTargetFileSize] = target
	}
	snap := &delta.Snapshot{Version: 3, Metadata: actions.Metadata{Configuration: conf}}
	for i, s := range sizes {
		n := int64(1000)
		snap.Files = append(snap.Files, &actions.Add{
			Path: fmt.Sprintf("part-%05d.parquet", i), Size: s, DataChange: true,
			ModificationTime: now.Add(-24 * time.Hour).UnixMilli(),
			ParsedStats:      &stats.Stats{NumRecords: &n},
		})
	}
	return snap
}

func repeat(n int, size int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = size
	}
	return out
}

// backlogAndPlan returns the daemon's backlog and trigger for snap under
// the default policy, and the plan a run would make.
func backlogAndPlan(t *testing.T, snap *delta.Snapshot, now time.Time) (scheduler.Backlog, string, *planner.CompactionPlan) {
	t.Helper()
	p := testPolicy("t")
	bl, err := ComputeBacklog(snap, p, now)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := planner.Plan(snap, p.PlannerPolicy(now))
	if err != nil {
		t.Fatal(err)
	}
	// A run happened a week ago: max_time_since_last_run is due too.
	return bl, scheduler.Evaluate(scheduler.Triggers(p.Triggers), bl, now.Add(-7*24*time.Hour), now), pl
}

func TestATargetFileSizeOf1gPutsSixty200MiBFilesInTheBacklogAndFiresTheTrigger(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	snap := sizedTable("1g", now, repeat(60, 200*policies.MiB)...)
	bl, trigger, pl := backlogAndPlan(t, snap, now)
	if len(pl.Jobs) != 12 {
		t.Fatalf("plan has %d jobs, want 12 (five 200 MiB files per 1 GiB bin)", len(pl.Jobs))
	}
	if bl.SmallFiles != 60 || bl.SmallBytes != 60*200*policies.MiB || bl.MergeableFiles != 60 || bl.MergeableBytes != bl.SmallBytes {
		t.Fatalf("backlog = %+v, want the 60 files the plan merges", bl)
	}
	if trigger != "small_files" {
		t.Fatalf("trigger = %q, want small_files", trigger)
	}
}

func TestATargetFileSizeOf32mbKeeps64MiBFilesOutOfTheBacklog(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	snap := sizedTable("32mb", now, repeat(80, 64*policies.MiB)...)
	bl, trigger, pl := backlogAndPlan(t, snap, now)
	if len(pl.Jobs) != 0 {
		t.Fatalf("plan has %d jobs, want none (every file is above the 32 MiB target)", len(pl.Jobs))
	}
	if bl.SmallFiles != 0 || bl.SmallBytes != 0 {
		t.Fatalf("backlog = %+v, want no small files", bl)
	}
	if trigger != "" {
		t.Fatalf("trigger %q fired on a table the planner finds nothing to do in", trigger)
	}
}

func TestAFullyCompactedTableLeavesTheBacklog(t *testing.T) {
	const mb = 1000 * 1000
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	// What a compaction with the default 128 MiB target leaves behind:
	// no two of these fit one bin.
	snap := sizedTable("", now, 114*mb, 115*mb, 41*mb)
	bl, trigger, pl := backlogAndPlan(t, snap, now)
	if len(pl.Jobs) != 0 {
		t.Fatalf("plan has %d jobs, want none", len(pl.Jobs))
	}
	if bl.SmallFiles != 3 || bl.MergeableFiles != 0 || bl.Files != 3 {
		t.Fatalf("backlog = %+v, want 3 small files, none mergeable", bl)
	}
	if len(bl.Held) != 1 || bl.Held[0].Code != string(planner.SkipSingleFileBin) || bl.Held[0].Files != 3 {
		t.Fatalf("held back = %+v, want the 3 files alone in their bins", bl.Held)
	}
	if trigger != "" {
		t.Fatalf("trigger %q fired on a compacted table", trigger)
	}
}

func TestAMalformedTargetFileSizeIsABacklogErrorNamingTheProperty(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	snap := sizedTable("huge", now, 1, 2, 3)
	_, err := ComputeBacklog(snap, testPolicy("t"), now)
	if err == nil || !strings.Contains(err.Error(), props.PropTargetFileSize) {
		t.Fatalf("err = %v", err)
	}
}

// sameBacklog reports whether two backlogs are equal, held-back groups
// included.
func sameBacklog(a, b scheduler.Backlog) bool { return reflect.DeepEqual(a, b) }
