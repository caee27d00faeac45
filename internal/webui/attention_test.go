package webui

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/clusteradvise"
	"github.com/compactord/compactord/inspect"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/scheduler"
)

var t0 = time.Date(2026, 3, 1, 3, 5, 0, 0, time.UTC)

// fleetOfEveryState is one table in each state the attention column
// knows, plus a healthy one; "a-healthy" sorts first by name.
func fleetOfEveryState() ([]scheduler.TableStatus, map[string]policies.Policy) {
	later := t0.Add(12 * time.Minute)
	next := t0.Add(time.Hour)
	stuck := scheduler.Hold{Code: "single_file_bin", Reason: "16 files alone in their bins", Files: 16, Bytes: 13*1024*16 + 100}
	healthy := &scheduler.Backlog{SmallFiles: 16, SmallBytes: 16 * 13 * 1024, Held: []scheduler.Hold{stuck}, Files: 20, Bytes: 1 << 30}
	ts := []scheduler.TableStatus{
		{Name: "a-healthy", State: scheduler.StateIdle, Enabled: true, LastVersion: 7, Backlog: healthy,
			LastRun: &scheduler.RunRecord{Result: scheduler.ResultCommitted, End: t0}},
		{Name: "b-halted", State: scheduler.StateHalted, Enabled: true, Halted: true, LastVersion: -1,
			HaltReason: "table requires reader feature \"x\"\nthis build cannot compact it", HaltedSince: &t0,
			HaltAdvice: scheduler.HaltAdvice("b-halted"), LastError: "table requires reader feature \"x\"\nthis build cannot compact it",
			PollError: "table requires reader feature \"x\"\nthis build cannot compact it"},
		{Name: "c-waiting", State: scheduler.StateWaiting, Enabled: true, LastVersion: -1,
			Waiting: &scheduler.Waiting{Reason: "path does not exist", Since: t0, Attempts: 3, NextAttempt: later}},
		{Name: "d-quarantined", State: scheduler.StateIdle, Enabled: true, Backlog: &scheduler.Backlog{},
			Quarantined: []string{"part-0001.parquet", "part-0002.parquet"}},
		{Name: "e-dv", State: scheduler.StateIdle, Enabled: true, NextRun: &next, Backlog: &scheduler.Backlog{DeletedRowsRatio: 0.449}},
		{Name: "f-settling", State: scheduler.StateIdle, Enabled: true, Backlog: &scheduler.Backlog{SmallFiles: 3, SmallBytes: 3 * 13 * 1024,
			Held: []scheduler.Hold{{Code: "settling", Reason: "3 files younger than the settle window (settle window 15m)", Files: 3, Bytes: 3 * 13 * 1024, EligibleAt: &later}}},
			LastRun: &scheduler.RunRecord{Result: scheduler.ResultNoop, End: t0, Report: scheduler.RunReport{
				Held: []scheduler.Hold{{Code: "settling", Reason: "3 files younger than the settle window (settle window 15m)", Files: 3}}}}},
		{Name: "g-noop", State: scheduler.StateIdle, Enabled: true, Backlog: &scheduler.Backlog{},
			LastRun: &scheduler.RunRecord{Result: scheduler.ResultNoop, End: t0, Report: scheduler.RunReport{
				Held: []scheduler.Hold{{Code: "byte_cap", Reason: "40 files over the run's byte cap (max_bytes_per_run 1 GiB)"}}}}},
	}
	pols := map[string]policies.Policy{}
	for _, t := range ts {
		p := policies.DefaultPolicy()
		p.Name, p.Schedule = t.Name, ""
		p.Triggers.DeletedRowsRatio = 0.05
		p.Triggers.SmallFiles = 4
		pols[t.Name] = p
	}
	return ts, pols
}

func fakeSource(ts []scheduler.TableStatus, pols map[string]policies.Policy) Source {
	return Source{Version: "test", Status: func() []scheduler.TableStatus { return ts },
		Policy: func(n string) (policies.Policy, bool) { p, ok := pols[n]; return p, ok },
		Plan: func(context.Context, policies.Policy, map[string]bool) (any, error) {
			return map[string]int{"jobs": 0}, nil
		},
		Inspect: func(_ context.Context, p policies.Policy) (*inspect.Report, error) {
			return &inspect.Report{Table: p.Name, Version: 4, NumFiles: 1, SizeBytes: 13*1024 + 10}, nil
		}}
}

func serve(t *testing.T, src Source) *httptest.Server {
	t.Helper()
	ui, err := New(src)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	ui.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string) string {
	t.Helper()
	code, body := testutil.Get(t, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	return body
}

func TestFleetJSONListsWhatNeedsAttentionAndSortsThoseTablesFirst(t *testing.T) {
	srv := serve(t, fakeSource(fleetOfEveryState()))
	var page struct{ Tables []fleetRow }
	if err := json.Unmarshal([]byte(get(t, srv.URL+"/ui/fleet.json")), &page); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"b-halted":      {"halted since 2026-03-01 03:05:00Z: table requires reader feature \"x\"\nthis build cannot compact it\nto clear: fix the cause, then POST /tables/b-halted/resume or reload (SIGHUP)"},
		"c-waiting":     {"waiting since 2026-03-01 03:05:00Z for the table to be readable: path does not exist\nattempt 3, next attempt 2026-03-01 03:17:00Z"},
		"d-quarantined": {"2 quarantined files, first part-0001.parquet"},
		"e-dv":          {"DV ratio 44.9% against a 5% trigger"},
		"f-settling":    {"3 files, 39 KiB held back until 2026-03-01 03:17:00Z: 3 files younger than the settle window (settle window 15m)"},
		"g-noop":        {"last run did nothing: 40 files over the run's byte cap (max_bytes_per_run 1 GiB)"},
		"a-healthy":     nil,
	}
	var order []string
	for _, r := range page.Tables {
		order = append(order, r.Name)
		var got []string
		for _, a := range r.Attention {
			got = append(got, a.Text)
		}
		if strings.Join(got, "|") != strings.Join(want[r.Name], "|") {
			t.Errorf("%s: attention %q, want %q", r.Name, got, want[r.Name])
		}
	}
	if got := strings.Join(order, " "); got != "b-halted c-waiting d-quarantined e-dv f-settling g-noop a-healthy" {
		t.Errorf("order %s: tables needing attention come first", got)
	}
}

func TestFleetJSONSplitsMergeableFromStuckAndFormatsLikeTheCLI(t *testing.T) {
	ts, pols := fleetOfEveryState()
	srv := serve(t, fakeSource(ts, pols))
	body := get(t, srv.URL+"/ui/fleet.json")
	var page struct{ Tables []fleetRow }
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		t.Fatal(err)
	}
	rows := map[string]fleetRow{}
	for _, r := range page.Tables {
		rows[r.Name] = r
	}
	h := rows["a-healthy"]
	if h.Mergeable != "0 files, 0 B" || h.Stuck != "16 files, 208.1 KiB" {
		t.Errorf("healthy: mergeable %q, stuck %q", h.Mergeable, h.Stuck)
	}
	if h.LastRun != "2026-03-01 03:05:00Z" {
		t.Errorf("last run %q, want UTC", h.LastRun)
	}
	if h.NextRun != "on triggers only" || rows["e-dv"].NextRun != "2026-03-01 04:05:00Z" || rows["b-halted"].NextRun != "not while halted" {
		t.Errorf("next run: %q, %q, %q", h.NextRun, rows["e-dv"].NextRun, rows["b-halted"].NextRun)
	}
	if regexp.MustCompile(`\d(KiB|MiB|B)\b|AM|PM`).MatchString(body) {
		t.Errorf("a size without its space or a local time: %s", body)
	}
}

func TestHaltedTablePageShowsTheRealVersionAndItsReasonOnce(t *testing.T) {
	ts, pols := fleetOfEveryState()
	srv := serve(t, fakeSource(ts, pols))
	body := get(t, srv.URL+"/tables/b-halted")
	if !strings.Contains(body, `version <span id="table-version">4</span>`) || strings.Contains(body, "version -1") {
		t.Errorf("halted table page does not show inspect's version 4:\n%s", body)
	}
	if n := strings.Count(body, "this build cannot compact it"); n != 1 {
		t.Errorf("the halt reason appears %d times, want once:\n%s", n, body)
	}
	if !strings.Contains(body, "to clear: fix the cause, then POST /tables/b-halted/resume") {
		t.Errorf("no advice on the halted page")
	}
}

func TestTablePageSaysOnTriggersOnlyAndSplitsStuckFiles(t *testing.T) {
	ts, pols := fleetOfEveryState()
	srv := serve(t, fakeSource(ts, pols))
	body := get(t, srv.URL+"/tables/a-healthy")
	if !strings.Contains(body, `<td id="next-run">on triggers only</td>`) {
		t.Errorf("next run does not say the table runs on triggers only")
	}
	if !strings.Contains(body, `stuck alone in their bins: <span id="stuck">16 files, 208.1 KiB</span>`) || !strings.Contains(body, "0 mergeable, 0 B") {
		t.Errorf("backlog does not split mergeable and stuck files")
	}
	if !strings.Contains(body, "13.0 KiB") {
		t.Errorf("inspect's size is not written as the CLI writes it")
	}
}

// The table page's maintenance rows say what an operation that committed
// nothing did (a checkpoint written) after its result, not a bare "noop".
func TestTheMaintenanceRowsSayWhatAnOperationDid(t *testing.T) {
	st := scheduler.TableStatus{Name: "t", LastRun: &scheduler.RunRecord{Result: scheduler.ResultDone, End: t0, Ops: []scheduler.OpRecord{
		{Op: "compaction", Result: scheduler.ResultNoop},
		{Op: "checkpoint", Result: scheduler.ResultDone, Report: scheduler.RunReport{Done: []string{"checkpoint of version 10 written (1.2 KiB)"}}},
		{Op: "log_cleanup", Result: scheduler.ResultNoop},
	}}}
	rows := maintenanceRows(st)
	if rows[0].Op != "checkpoint" || rows[0].Last != "done: checkpoint of version 10 written (1.2 KiB)" {
		t.Errorf("checkpoint row %+v", rows[0])
	}
	if rows[1].Last != "noop" || rows[2].Last != "not in the last run" {
		t.Errorf("log cleanup and vacuum rows %+v %+v", rows[1], rows[2])
	}
}

func TestFleetJSONSaysWhereAQueuedTableIsInTheQueueAndWhy(t *testing.T) {
	ts, pols := fleetOfEveryState()
	ts[0].State = scheduler.StateQueued
	ts[0].Fleet = scheduler.FleetStatus{Quota: 0.5, QuotaOccupation: 1.2,
		Queued: &scheduler.Queued{Position: 3, Score: 2, Priority: 2.5, Why: "over its quota; it waits while tables under quota wait"}}
	srv := serve(t, fakeSource(ts, pols))
	var page struct{ Tables []fleetRow }
	if err := json.Unmarshal([]byte(get(t, srv.URL+"/ui/fleet.json")), &page); err != nil {
		t.Fatal(err)
	}
	for _, r := range page.Tables {
		want := ""
		if r.Name == ts[0].Name {
			want = "#3 · score 2.50 · quota 120% used · over its quota; it waits while tables under quota wait"
		}
		if r.Queue != want {
			t.Errorf("%s: queue %q, want %q", r.Name, r.Queue, want)
		}
	}
}

// A table whose keys CLUSTER BY AUTO chose shows them on its page with the
// last decision: old and new keys, the version that committed them, the
// evidence and the estimates.
func TestTablePageShowsTheAutoClusteringKeysAndTheLastDecision(t *testing.T) {
	ts, pols := fleetOfEveryState()
	src := fakeSource(ts, pols)
	at := time.Date(2026, 3, 1, 3, 5, 0, 0, time.UTC)
	src.Inspect = func(_ context.Context, p policies.Policy) (*inspect.Report, error) {
		return &inspect.Report{Table: p.Name, Version: 9, AutoClustering: &inspect.AutoClustering{Keys: []string{"b", "c"}, KeysSince: at, Checked: at,
			Verdict: "change: {b, c} reads 91% fewer bytes", Predicates: 500, EvidencePerDay: 71.4,
			LastDecision: &clusteradvise.Decision{At: at, Version: 9, Old: []string{"a"}, New: []string{"b", "c"}, Applied: true,
				EvidenceWeight: 480, EvidenceRate: 71.4, OldBytesRead: 300 << 20, NewBytesRead: 27 << 20}}}, nil
	}
	body := get(t, serve(t, src).URL+"/tables/a-healthy")
	for _, want := range []string{
		`<td id="auto-keys">b, c since 2026-03-01 03:05:00Z</td>`,
		`2026-03-01 03:05:00Z: change: {b, c} reads 91% fewer bytes`,
		`a &rarr; b, c, committed as version 9`,
		`300 MiB &rarr; 27 MiB`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the table page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(get(t, serve(t, fakeSource(ts, pols)).URL+"/tables/a-healthy"), "Clustering keys (auto)") {
		t.Error("a table without auto clustering shows the section")
	}
}
