package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/inspect"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/scheduler"
)

// The browser test drives Debian's headless Chromium through playwright-core
// (tools/webcheck/webcheck.cjs, installed by scripts/test.d/browser.sh)
// over the web view of the real binary compacting real tables on loopback.

// playwrightVersion is the playwright-core that scripts/test.d/browser.sh
// installs.
const playwrightVersion = "1.65.1"

// browserTools finds node, Chromium and playwright-core; what is missing
// skips the test, except under CI=true where it fails it.
func browserTools(t *testing.T) (node, chromium, playwright string) {
	t.Helper()
	chromium = os.Getenv("COMPACTORD_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	playwright = os.Getenv("COMPACTORD_PLAYWRIGHT_CORE")
	if playwright == "" {
		playwright = filepath.Join(testCacheDir(), "npm", "playwright-core-"+playwrightVersion, "node_modules", "playwright-core")
	}
	var missing []string
	node, err := exec.LookPath("node")
	if err != nil {
		missing = append(missing, "node (apt-get install nodejs)")
	}
	if _, err := os.Stat(chromium); err != nil {
		missing = append(missing, chromium+" (apt-get install chromium)")
	}
	if _, err := os.Stat(filepath.Join(playwright, "package.json")); err != nil {
		missing = append(missing, "playwright-core at "+playwright+" (scripts/test.d/browser.sh installs it)")
	}
	if len(missing) > 0 {
		msg := "browser test needs " + strings.Join(missing, ", ")
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return node, chromium, playwright
}

// testCacheDir is where the test command caches what it installs
// (COMPACTORD_CACHE_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/compactord).
func testCacheDir() string {
	if d := os.Getenv("COMPACTORD_CACHE_DIR"); d != "" {
		return d
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "compactord")
}

// webcheckResult is what webcheck.cjs saw.
type webcheckResult struct {
	Requests      []string `json:"requests"`
	ConsoleErrors []string `json:"consoleErrors"`
	Fleet         []struct {
		Table, State, Reason, Result, NextRun string
		Attention                             []struct{ Kind, Text string }
	} `json:"fleet"`
	SortedDesc     []string `json:"sortedDesc"`
	SortedAsc      []string `json:"sortedAsc"`
	FilteredHalted []string `json:"filteredHalted"`
	FilteredByName []string `json:"filteredByName"`
	HaltedPage     struct {
		Reason      string `json:"reason"`
		RunDisabled bool   `json:"runDisabled"`
		Version     string `json:"version"`
		Text        string `json:"text"`
	} `json:"haltedPage"`
	Histogram []histBar `json:"histogram"`
	SkewBars  int       `json:"skewBars"`
	RunsBefore,
	RunsAfter []struct {
		Reason, Result    string
		FilesIn, FilesOut int
	}
	LastRun string `json:"lastRun"`
}

type histBar struct {
	Label string `json:"label"`
	Files int    `json:"files"`
}

func TestBrowserFleetAndTablePagesAgainstTheRealDaemon(t *testing.T) {
	node, chromium, playwright := browserTools(t)
	bin := buildBinary(t)
	root, pol := policyRoot(t)
	// events: written here, compacted by its poll trigger. parts: a copy
	// of a Spark table (partitioned, DVs, a checkpoint) that only "Run now"
	// compacts. features: a copy of a table this build refuses (halts).
	// off: a disabled policy. The attention column gets one table in each
	// state: events is healthy, features halted, broken has a corrupt file
	// (quarantined), dvsmall a DV ratio (20%) over its 5% trigger that no
	// run fixes (its one file is alone in its bin and under
	// max_deleted_rows_ratio), settling files in an hour's settle window,
	// missing a table not there yet (waiting).
	_, eventsURL := newTable(t, filepath.Join(root, "events"), 3, 2, 50)
	_, offURL := newTable(t, filepath.Join(root, "off"), 1, 2, 10)
	_, settlingURL := newTable(t, filepath.Join(root, "settling"), 3, 2, 10)
	broken, brokenURL := newTable(t, filepath.Join(root, "broken"), 4, 2, 30)
	corrupt := corruptOneFile(t, broken, filepath.Join(root, "broken"))
	partsDir, featDir, dvDir := filepath.Join(root, "parts"), filepath.Join(root, "features"), filepath.Join(root, "dvsmall")
	for dir, name := range map[string]string{partsDir: "dv-partitioned-with-checkpoint", featDir: "many-table-features", dvDir: "dv-small"} {
		if err := os.CopyFS(dir, os.DirFS(testutil.DeltaTable(t, name))); err != nil {
			t.Fatal(err)
		}
	}
	writePolicy(t, pol, "events.hcl", policyHCL("events", eventsURL, ""))
	writePolicy(t, pol, "off.hcl", policyHCL("off", offURL, "  enabled = false"))
	writePolicy(t, pol, "broken.hcl", policyHCL("broken", brokenURL, ""))
	writePolicy(t, pol, "missing.hcl", policyHCL("missing", "file://"+filepath.Join(root, "not-yet"), ""))
	writePolicy(t, pol, "settling.hcl", strings.Replace(policyHCL("settling", settlingURL, ""), `settle_window = "0s"`, `settle_window = "1h"`, 1))
	writePolicy(t, pol, "dvsmall.hcl", strings.Replace(policyHCL("dvsmall", "file://"+dvDir, "  max_deleted_rows_ratio = 0.9"),
		"small_files = 4", "small_files = 4\n    deleted_rows_ratio = 0.05", 1))
	writePolicy(t, pol, "features.hcl", policyHCL("features", "file://"+featDir, ""))
	writePolicy(t, pol, "parts.hcl", strings.Replace(policyHCL("parts", "file://"+partsDir, ""),
		"small_files = 4", "small_files = 100000\n    deleted_rows_ratio = 0.9", 1))

	proc := startDaemonProc(t, bin, "run", "--policies", pol, "--http", "127.0.0.1:0", "--poll", "1s",
		"--log-format", "json", "--log-level", "debug", "--workers", "2")
	base, logs := proc.base, proc.logs
	wait(t, "events compacted, features halted, broken quarantined, dvsmall run, settling and parts polled", 90*time.Second, logs, func() bool {
		p := getStatus(t, base)
		ev, f, pa := tableStatus(p, "events"), tableStatus(p, "features"), tableStatus(p, "parts")
		br, dv, se, mi := tableStatus(p, "broken"), tableStatus(p, "dvsmall"), tableStatus(p, "settling"), tableStatus(p, "missing")
		return ev.LastRun != nil && ev.LastRun.Result == scheduler.ResultCommitted && ev.State == scheduler.StateIdle &&
			f.Halted && pa.Backlog != nil && len(br.Quarantined) == 1 && br.State == scheduler.StateIdle &&
			dv.LastRun != nil && dv.State == scheduler.StateIdle && se.Backlog != nil && len(se.Backlog.Held) > 0 &&
			mi.State == scheduler.StateWaiting
	})
	settleEnd := ""
	for _, h := range tableStatus(getStatus(t, base), "settling").Backlog.Held {
		if h.EligibleAt != nil {
			settleEnd = h.EligibleAt.UTC().Format("2006-01-02 15:04:05Z")
		}
	}
	if settleEnd == "" {
		t.Fatalf("settling: no hold with an end: %+v", tableStatus(getStatus(t, base), "settling").Backlog)
	}
	if pa := tableStatus(getStatus(t, base), "parts"); pa.LastRun != nil {
		t.Fatalf("parts ran before the button was pressed: %+v", pa.LastRun)
	}

	// What `compactord inspect` says of parts, before the page is looked at.
	var insp inspect.Report
	out, err := exec.Command(bin, "inspect", "--json", "file://"+partsDir).Output()
	if err != nil {
		t.Fatalf("inspect: %v", err)
	}
	if err := json.Unmarshal(out, &insp); err != nil {
		t.Fatal(err)
	}
	var wantHist []histBar
	for _, b := range insp.SizeHistogram {
		wantHist = append(wantHist, histBar{Label: b.Label, Files: b.Files})
	}

	shots, err := os.MkdirTemp("", "compactord-web-screenshots-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("..", "..", "tools", "webcheck", "webcheck.cjs"))
	cmd.Env = append(os.Environ(), "PLAYWRIGHT_CORE="+playwright, "CHROMIUM="+chromium, "BASE="+base,
		"OUT="+shots, "TABLE=parts", "HALTED=features", "FLEET_PNG="+os.Getenv("COMPACTORD_FLEET_PNG"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("webcheck: %v\n%s\ndaemon log:\n%s", err, stderr.String(), logs.dump())
	}
	var got webcheckResult
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("webcheck output: %v\n%s", err, stdout.String())
	}
	t.Logf("screenshots: %s and %s", filepath.Join(shots, "fleet.png"), filepath.Join(shots, "table.png"))

	// The fleet page lists every table in its state, those needing
	// attention first, each with its reasons; the healthy ones with none.
	states := map[string]string{}
	attention := map[string][]string{}
	var order []string
	for _, r := range got.Fleet {
		states[r.Table] = r.State
		order = append(order, r.Table)
		for _, a := range r.Attention {
			attention[r.Table] = append(attention[r.Table], a.Kind+": "+a.Text)
		}
		if r.Table == "features" && !strings.Contains(r.Reason, "cannot be compacted") {
			t.Errorf("fleet: the halted table's reason is %q", r.Reason)
		}
	}
	if want := map[string]string{"events": "idle", "features": "halted", "off": "disabled", "parts": "idle",
		"broken": "idle", "dvsmall": "idle", "settling": "idle", "missing": "waiting"}; !reflect.DeepEqual(states, want) {
		t.Errorf("fleet states = %v, want %v", states, want)
	}
	wantAttention := map[string][]string{
		"features": {"halted: halted since ", "cannot be compacted", "to clear: fix the cause, then POST /tables/features/resume or reload (SIGHUP)"},
		"broken":   {"quarantined: 1 quarantined file: " + corrupt},
		"missing":  {"waiting: waiting since ", "for the table to be readable: ", "next attempt 20"},
		"dvsmall":  {"trigger: DV ratio 20% against a 5% trigger"},
		"settling": {"held: 6 files, ", " held back until " + settleEnd + ": 6 files younger than the settle window"},
	}
	for _, name := range []string{"events", "off", "parts", "features", "broken", "dvsmall", "settling", "missing"} {
		got := strings.Join(attention[name], "\n")
		if len(wantAttention[name]) == 0 && got != "" {
			t.Errorf("fleet: the healthy table %s needs attention: %q", name, got)
		}
		for _, w := range wantAttention[name] {
			if !strings.Contains(got, w) {
				t.Errorf("fleet: attention of %s is %q, want it to say %q", name, got, w)
			}
		}
	}
	if len(order) < 5 || !sameSet(order[:5], []string{"broken", "dvsmall", "features", "missing", "settling"}) {
		t.Errorf("fleet order %v: the tables needing attention come first", order)
	}
	for _, r := range got.Fleet {
		if (r.Table == "events" || r.Table == "parts") && r.NextRun != "on triggers only" {
			t.Errorf("next run of %s is %q, want on triggers only", r.Table, r.NextRun)
		}
	}
	if want := []string{"settling", "parts", "off", "missing", "features", "events", "dvsmall", "broken"}; !reflect.DeepEqual(got.SortedDesc, want) {
		t.Errorf("sorted by name descending: %v", got.SortedDesc)
	}
	if want := []string{"broken", "dvsmall", "events", "features", "missing", "off", "parts", "settling"}; !reflect.DeepEqual(got.SortedAsc, want) {
		t.Errorf("sorted by name ascending: %v", got.SortedAsc)
	}
	if !reflect.DeepEqual(got.FilteredHalted, []string{"features"}) || !reflect.DeepEqual(got.FilteredByName, []string{"parts"}) {
		t.Errorf("filters: halted %v, by name %v", got.FilteredHalted, got.FilteredByName)
	}
	if !strings.Contains(got.HaltedPage.Reason, "cannot be compacted") || !got.HaltedPage.RunDisabled {
		t.Errorf("halted table page: %+v", got.HaltedPage)
	}
	// Its header shows the table's version (inspect's: the table halted
	// before a poll read one), and its reason once.
	if got.HaltedPage.Version != "4" || strings.Count(got.HaltedPage.Text, "blahabl") != 1 {
		t.Errorf("halted table page: version %q, reason %d times:\n%s", got.HaltedPage.Version, strings.Count(got.HaltedPage.Text, "blahabl"), got.HaltedPage.Text)
	}

	// The table page's histogram is inspect's.
	if !reflect.DeepEqual(got.Histogram, wantHist) {
		t.Errorf("histogram on the page %v, inspect %v", got.Histogram, wantHist)
	}
	if got.SkewBars != min(insp.NumPartitions, 20) || got.SkewBars == 0 {
		t.Errorf("partition skew has %d bars for %d partitions", got.SkewBars, insp.NumPartitions)
	}

	// "Run now" ran the table, and the reloaded page shows that run.
	for _, r := range got.RunsBefore {
		if r.Reason == scheduler.ReasonAPI {
			t.Errorf("an api run before the button was pressed: %+v", got.RunsBefore)
		}
	}
	if len(got.RunsAfter) == 0 || got.RunsAfter[0].Reason != scheduler.ReasonAPI || got.RunsAfter[0].Result != scheduler.ResultCommitted ||
		got.RunsAfter[0].FilesIn == 0 || !strings.Contains(got.LastRun, "(api)") {
		t.Errorf("after Run now: runs %+v, last run %q", got.RunsAfter, got.LastRun)
	}
	st := tableStatus(getStatus(t, base), "parts")
	if st.LastRun == nil || st.LastRun.Reason != scheduler.ReasonAPI || st.LastRun.Report.FilesRemoved != got.RunsAfter[0].FilesIn {
		t.Errorf("/status of parts after Run now: %+v", st.LastRun)
	}

	// Every request the pages made went to the daemon on loopback.
	bu, _ := url.Parse(base)
	if len(got.Requests) < 5 {
		t.Errorf("only %d requests recorded", len(got.Requests))
	}
	for _, r := range got.Requests {
		u, err := url.Parse(r)
		if err != nil || u.Scheme != "http" || u.Host != bu.Host {
			t.Errorf("request to %s left the daemon's loopback listener", r)
		}
	}
	if len(got.ConsoleErrors) > 0 {
		t.Errorf("console errors: %v", got.ConsoleErrors)
	}
	for _, name := range []string{"fleet.png", "table.png"} {
		b, err := os.ReadFile(filepath.Join(shots, name))
		if err != nil || len(b) < 1000 || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("screenshot %s: %d bytes, %v", name, len(b), err)
		}
	}
}

func sameSet(a, b []string) bool {
	x, y := append([]string(nil), a...), append([]string(nil), b...)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// corruptOneFile overwrites one live data file of w's table at dir with
// garbage of the same size (a corrupt file the daemon quarantines) and
// returns its path as the log spells it.
func corruptOneFile(t *testing.T, w *writers, dir string) string {
	t.Helper()
	snap, err := delta.LoadSnapshot(context.Background(), w.t, -1)
	if err != nil {
		t.Fatal(err)
	}
	path := snap.Files[3].Path
	overwriteWithGarbage(t, filepath.Join(dir, path), 3)
	return path
}
