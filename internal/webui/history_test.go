package webui

import (
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
