package webui

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/compactord/compactord/scheduler"
)

func TestRingKeepsTheNewestInOrder(t *testing.T) {
	cases := []struct {
		add  int
		want []int
	}{{0, nil}, {2, []int{0, 1}}, {3, []int{0, 1, 2}}, {4, []int{1, 2, 3}}, {7, []int{4, 5, 6}}}
	for _, c := range cases {
		r := newRing[int](3)
		for i := 0; i < c.add; i++ {
			r.add(i)
		}
		if got := r.items(); !slices.Equal(got, c.want) {
			t.Errorf("after %d adds: %v, want %v", c.add, got, c.want)
		}
	}
}

func TestHistoryRecordsChangedBacklogsAndNewRunsAndForgetsRemovedTables(t *testing.T) {
	h := newHistory()
	t0 := time.Unix(1_700_000_000, 0)
	run := &scheduler.RunRecord{Reason: "api", Result: "committed", End: t0}
	st := func(small int, lr *scheduler.RunRecord) []scheduler.TableStatus {
		return []scheduler.TableStatus{{Name: "a", Backlog: &scheduler.Backlog{SmallFiles: small}, LastRun: lr}}
	}
	h.observe(st(5, nil), t0)
	h.observe(st(5, nil), t0.Add(time.Second))                    // unchanged: not kept
	h.observe(st(7, run), t0.Add(2*time.Second))                  // changed, first run
	h.observe(st(7, run), t0.Add(3*time.Second))                  // same run again: not kept
	h.observe(st(7, run), t0.Add(2*time.Second+backlogKeepEvery)) // unchanged, but a minute passed
	pts, runs := h.of("a")
	if len(pts) != 3 || pts[0].SmallFiles != 5 || pts[1].SmallFiles != 7 || len(runs) != 1 || runs[0].Reason != "api" {
		t.Fatalf("points %+v runs %+v", pts, runs)
	}
	h.observe(nil, t0.Add(time.Hour))
	if pts, runs := h.of("a"); pts != nil || runs != nil {
		t.Fatalf("a removed table keeps its history: %v %v", pts, runs)
	}
}

// An idle table's unchanged backlog keeps two points (where the flat line
// starts and where it ends so far), not one per minute, and the rings hold
// no more than they were given.
func TestAnUnchangedBacklogKeepsTwoPoints(t *testing.T) {
	h := newHistory()
	t0 := time.Unix(1_700_000_000, 0)
	st := func(small int) []scheduler.TableStatus {
		return []scheduler.TableStatus{{Name: "a", Backlog: &scheduler.Backlog{SmallFiles: small}}}
	}
	for i := range 100 {
		h.observe(st(3), t0.Add(time.Duration(i)*backlogKeepEvery))
	}
	pts, _ := h.of("a")
	if len(pts) != 2 || !pts[0].At.Equal(t0) || !pts[1].At.Equal(t0.Add(99*backlogKeepEvery)) {
		t.Fatalf("a flat backlog kept %d points, want 2 (first %+v)", len(pts), pts[0])
	}
	h.observe(st(4), t0.Add(100*backlogKeepEvery))
	h.observe(st(4), t0.Add(101*backlogKeepEvery))
	h.observe(st(4), t0.Add(102*backlogKeepEvery))
	pts, _ = h.of("a")
	if len(pts) != 4 || pts[2].SmallFiles != 4 || !pts[3].At.Equal(t0.Add(102*backlogKeepEvery)) {
		t.Fatalf("points after a change: %+v", pts)
	}
	th := h.tables["a"]
	if cap(th.backlog.buf) >= backlogRingSize || cap(th.runs.buf) != 0 {
		t.Fatalf("rings of %d and %d elements for 4 points and no run", cap(th.backlog.buf), cap(th.runs.buf))
	}
}

// Sampling every table every two seconds through Samples costs no
// allocation per table whose backlog and last run did not change, and a
// table the samples no longer name is forgotten.
func TestSamplingUnchangedTablesAllocatesNothingPerTable(t *testing.T) {
	const n = 1000
	h := newHistory()
	t0 := time.Unix(1_700_000_000, 0)
	run := &scheduler.RunRecord{Reason: "api", Result: "committed", End: t0}
	samples := make([]scheduler.Sample, n)
	for i := range samples {
		samples[i] = scheduler.Sample{Name: fmt.Sprintf("t%04d", i), Backlog: &scheduler.Backlog{SmallFiles: i}, LastRun: run}
	}
	each := func(f func(scheduler.Sample)) {
		for _, s := range samples {
			f(s)
		}
	}
	h.observeEach(each, t0)
	now := t0
	allocs := testing.AllocsPerRun(10, func() {
		now = now.Add(time.Second)
		h.observeEach(each, now)
	})
	if allocs > 1 { // the look's own closure
		t.Fatalf("a look at %d unchanged tables allocated %.0f times, want at most 1", n, allocs)
	}
	h.observeEach(func(f func(scheduler.Sample)) {
		each(func(s scheduler.Sample) {
			if s.Name != "t0007" {
				f(s)
			}
		})
	}, now.Add(time.Second))
	if pts, runs := h.of("t0007"); pts != nil || runs != nil || len(h.tables) != n-1 {
		t.Fatalf("a table no longer sampled keeps its history (%d tables kept)", len(h.tables))
	}
	if pts, runs := h.of("t0008"); len(pts) != 1 || pts[0].SmallFiles != 8 || len(runs) != 1 {
		t.Fatalf("t0008: points %+v runs %+v", pts, runs)
	}
}
