package main

import (
	"net/http"
	"slices"
	"strings"
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

func TestWebPagesAreEmbeddedAndSelfContained(t *testing.T) {
	td := startTestDaemon(t, memPolicyDir(t, "a"))
	for _, c := range []struct {
		path, want string
		code       int
	}{
		{"/", `<table id="fleet"`, 200},
		{"/ui/fleet.js", "fetch(\"/status\"", 200},
		{"/ui/app.css", "svg.chart", 200},
		{"/tables/a", `id="run-now"`, 200},
		{"/tables/zzz", "no such table", 404},
	} {
		resp, err := http.Get(td.base + c.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		code, body := get(t, td.base+c.path)
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("GET %s: %d, body lacks %q", c.path, code, c.want)
		}
		if c.code == 200 && !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("GET %s: CSP %q", c.path, resp.Header.Get("Content-Security-Policy"))
		}
		if strings.Contains(body, "http://") || strings.Contains(body, "https://") {
			t.Errorf("GET %s names an outside URL", c.path)
		}
	}
	// The fake backend does not inspect: the page says so instead of charts.
	if _, body := get(t, td.base+"/tables/a"); !strings.Contains(body, "does not inspect tables") {
		t.Errorf("table page without Inspect:\n%s", body)
	}
}
