package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/planner"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/scheduler"
)

// loggedDaemon is a daemon over the real Delta backend on a policy
// directory, with its JSON log lines collected.
type loggedDaemon struct {
	*testDaemon
	logs *logLines
}

func startLoggedDaemon(t *testing.T, dir string) *loggedDaemon {
	t.Helper()
	logs, log := jsonLog(t)
	td := startTestDaemonLogged(t, dir, nil, newDeltaBackend(log, policies.Daemon{}, nil), log)
	return &loggedDaemon{testDaemon: td, logs: logs}
}

// runOnce asks for a run of table over POST and waits for the run record
// it leaves (the first after any earlier one, retries included, whose
// result is want).
func (ld *loggedDaemon) runOnce(t *testing.T, table, want string) scheduler.TableStatus {
	t.Helper()
	if code := post(t, ld.base+"/tables/"+table+"/run"); code != http.StatusAccepted {
		t.Fatalf("POST run: %d", code)
	}
	var st *scheduler.TableStatus
	waitFor(t, "a "+want+" run of "+table, func() bool {
		st = tableStatus(getStatus(t, ld.base), table)
		return st != nil && st.LastRun != nil && st.LastRun.Result == want
	})
	return *st
}

// fileSizes returns the sizes of the table's live files.
func fileSizes(t *testing.T, tbl *delta.Table) (lo, hi, total int64) {
	t.Helper()
	snap := tabletest.Latest(t, tbl)
	lo = 1 << 62
	for _, f := range snap.Files {
		lo, hi, total = min(lo, f.Size), max(hi, f.Size), total+f.Size
	}
	return lo, hi, total
}

// noopCase is one reason a run does nothing (or not all it could), on a
// real table built for it.
type noopCase struct {
	name string
	// build makes the table and returns the policy body's attributes
	// beside url.
	build func(t *testing.T) (*delta.Table, string)
	code  planner.SkipCode
	files int
	// words must appear in the one-line reason (log, CLI, /status).
	words string
	// noop: the run commits nothing; else it commits and holds the rest.
	noop bool
	// cli: the command line can see the reason (quarantine is the daemon's).
	cli bool
	// small, held: the backlog's small files and the ones it holds back
	// for code (-1: the poll does not know the reason).
	small, held int
}

func noopCases() []noopCase {
	fresh := func(t *testing.T, n int) *delta.Table {
		return tabletest.NewTableWith(t, "file://"+t.TempDir(), tabletest.Spec{Fresh: true}, tabletest.Batches(n, 10)...)
	}
	old := func(t *testing.T, n int) *delta.Table {
		return tabletest.NewTable(t, "file://"+t.TempDir(), tabletest.Batches(n, 10)...)
	}
	return []noopCase{
		{name: "settle window", code: planner.SkipSettling, files: 3, words: "younger than the settle window (settle window 15m; the first becomes eligible at",
			noop: true, cli: true, small: 3, held: 3,
			build: func(t *testing.T) (*delta.Table, string) { return fresh(t, 3), "" }},
		{name: "alone in their bins", code: planner.SkipSingleFileBin, files: 2, words: "alone in its bin", noop: true, cli: true, small: 2, held: 2,
			build: func(t *testing.T) (*delta.Table, string) {
				tbl := old(t, 2)
				lo, hi, _ := fileSizes(t, tbl)
				// Each file fits the target, no two together.
				return tbl, fmt.Sprintf("settle_window = \"0s\"\n  target_file_size = \"%dB\"", lo+hi-1)
			}},
		{name: "byte cap", code: planner.SkipByteCap, files: 2, words: "over the per-run byte cap (max bytes per run 100 B)", noop: true, cli: true, small: 2, held: 0,
			build: func(t *testing.T) (*delta.Table, string) {
				return old(t, 2), "settle_window = \"0s\"\n  max_bytes_per_run = \"100B\""
			}},
		{name: "job cap", code: planner.SkipJobCap, files: 2, words: "over the per-run job cap (max jobs per run 1)", noop: false, cli: true, small: 4, held: 0,
			build: func(t *testing.T) (*delta.Table, string) {
				tbl, _ := tabletest.NewDayTable(t, []int{1, 1, 2, 2})
				return tbl, "settle_window = \"0s\"\n  max_jobs_per_run = 1"
			}},
		{name: "nothing small", code: planner.SkipLargeEnough, files: 2, words: "not small and few deleted rows (small means below 1 B", noop: true, cli: true, small: 0, held: 0,
			build: func(t *testing.T) (*delta.Table, string) {
				return old(t, 2), "settle_window = \"0s\"\n  min_file_size = \"1B\""
			}},
		{name: "quarantined", code: planner.SkipQuarantined, files: 1, words: "quarantined", noop: true, cli: false, small: 2, held: -1,
			build: func(t *testing.T) (*delta.Table, string) {
				tbl := old(t, 2)
				snap := tabletest.Latest(t, tbl)
				if err := tbl.Bucket.WriteAll(context.Background(), snap.Files[0].Path, []byte("not a parquet file"), nil); err != nil {
					t.Fatal(err)
				}
				return tbl, "settle_window = \"0s\""
			}},
	}
}

func noopPolicyDir(t *testing.T, tbl *delta.Table, attrs string) string {
	t.Helper()
	dir := t.TempDir()
	writePolicy(t, dir, "t.hcl", fmt.Sprintf("table \"t\" {\n  url = %q\n  %s\n}\n", tbl.URL, attrs))
	return dir
}

// TestEveryRunThatDoesNothingSaysWhy runs each reason on a real table
// through the daemon (POST run: its log line, /status's last run and
// backlog) and the command line (plan and compact with --policies).
func TestEveryRunThatDoesNothingSaysWhy(t *testing.T) {
	for _, tc := range noopCases() {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cli {
				checkCLISaysWhy(t, tc)
			}
			tbl, attrs := tc.build(t)
			dir := noopPolicyDir(t, tbl, attrs)
			read := tabletest.Latest(t, tbl).Version

			ld := startLoggedDaemon(t, dir)
			// The backlog of the first poll, before any run.
			var before *scheduler.Backlog
			waitFor(t, "the first poll", func() bool {
				if st := tableStatus(getStatus(t, ld.base), "t"); st != nil {
					before = st.Backlog
				}
				return before != nil
			})
			checkBacklog(t, tc, before)
			want := scheduler.ResultNoop
			if !tc.noop {
				want = scheduler.ResultCommitted
			}
			st := ld.runOnce(t, "t", want)
			hold := findHold(st.LastRun.Report.Held, string(tc.code))
			if hold == nil || hold.Files != tc.files || !strings.Contains(hold.Reason, tc.words) {
				t.Fatalf("/status last_run.report.held_back = %+v, want %d files %s (%q)", st.LastRun.Report.Held, tc.files, tc.code, tc.words)
			}
			if (tc.code == planner.SkipSettling) != (hold.EligibleAt != nil) {
				t.Errorf("eligible_at = %v for %s", hold.EligibleAt, tc.code)
			}
			if ops := st.LastRun.Ops; len(ops) == 0 || findHold(ops[0].Report.Held, string(tc.code)) == nil {
				t.Errorf("/status last_run.ops[0] (%+v) does not hold the files back", ops)
			}

			key, wantVersion := "held_back", fmt.Sprint(read+1)
			if tc.noop {
				key, wantVersion = "why", fmt.Sprint(read)
			}
			var line map[string]any
			waitFor(t, "the run's log line", func() bool {
				_, line = ld.logs.find(0, "run finished", map[string]string{"result": want})
				return line != nil
			})
			if why, _ := line[key].(string); !strings.Contains(why, tc.words) || fmt.Sprint(line["version"]) != wantVersion {
				t.Errorf("log line %v: want %s with %q and version %s\n%s", line, key, tc.words, wantVersion, ld.logs.dump())
			}
		})
	}
}

func findHold(hs []scheduler.Hold, code string) *scheduler.Hold {
	for i := range hs {
		if hs[i].Code == code {
			return &hs[i]
		}
	}
	return nil
}

func checkBacklog(t *testing.T, tc noopCase, bl *scheduler.Backlog) {
	t.Helper()
	if bl == nil {
		t.Fatal("/status has no backlog")
	}
	if bl.SmallFiles != tc.small {
		t.Errorf("/status backlog.small_files = %d, want %d (%+v)", bl.SmallFiles, tc.small, bl)
	}
	switch h := findHold(bl.Held, string(tc.code)); {
	case tc.held > 0 && (h == nil || h.Files != tc.held || !strings.Contains(h.Reason, tc.words)):
		t.Errorf("/status backlog.held_back = %+v, want %d files %s", bl.Held, tc.held, tc.code)
	case tc.held == 0 && h != nil:
		t.Errorf("/status backlog.held_back = %+v, want nothing held for %s", bl.Held, tc.code)
	}
	if tc.held == 0 && tc.small > 0 && bl.MergeableFiles != tc.small {
		t.Errorf("/status backlog.mergeable_files = %d, want %d", bl.MergeableFiles, tc.small)
	}
}

// checkCLISaysWhy runs plan --out and compact with --policies on a table
// of its own and reads the reason and the policy line in what they print.
func checkCLISaysWhy(t *testing.T, tc noopCase) {
	t.Helper()
	tbl, attrs := tc.build(t)
	dir := noopPolicyDir(t, tbl, attrs)
	label := "held back: "
	if tc.noop {
		label = "why: "
	}
	wantLine := fmt.Sprintf("%s%d file", label, tc.files)
	out := filepath.Join(t.TempDir(), "plan.json")
	if s := runCLI(t, nil, "plan", "--policies", dir, "--table", "t", "--out", out); !strings.Contains(s, wantLine) || !strings.Contains(s, tc.words) || !strings.Contains(s, "policy t (") {
		t.Errorf("plan printed:\n%s\nwant %q, %q and the policy used", s, wantLine, tc.words)
	}
	var pf planFile
	runCLI(t, &pf, "plan", "--policies", dir, "--table", "t")
	if pf.Policy == nil || pf.Policy.From != "policy t" || !hasSkip(pf.Skipped, tc.code, tc.files) {
		t.Errorf("plan file: policy %+v, skipped %+v; want policy t and %d files %s", pf.Policy, pf.Skipped, tc.files, tc.code)
	}
	s := runCLI(t, nil, "compact", "--policies", dir, "--table", "t")
	if !strings.Contains(s, wantLine) || !strings.Contains(s, tc.words) || !strings.Contains(s, "policy t (") {
		t.Errorf("compact printed:\n%s\nwant %q, %q and the policy used", s, wantLine, tc.words)
	}
	if tc.noop != strings.HasPrefix(s, "nothing committed") {
		t.Errorf("compact printed:\n%s\nwant nothing committed: %v", s, tc.noop)
	}
}

// runCLI runs the command line, which must exit 0, and returns its stdout,
// decoded as JSON into v unless v is nil.
func runCLI(t *testing.T, v any, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := mainExit(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
	}
	if v != nil {
		if err := json.Unmarshal(stdout.Bytes(), v); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	return stdout.String()
}

func hasSkip(sks []planner.Skip, code planner.SkipCode, files int) bool {
	for _, sk := range sks {
		if sk.Code == code && sk.Files == files {
			return true
		}
	}
	return false
}

// TestPlanWithPoliciesIsThePlanOfTheDaemon plans the same tables with
// `plan --policies DIR --table NAME` and GET /tables/NAME/plan and
// compares the plans; the plain `plan URL` (no settle window, the command
// line's defaults) is another plan.
func TestPlanWithPoliciesIsThePlanOfTheDaemon(t *testing.T) {
	for _, tc := range []struct {
		name  string
		table func(t *testing.T) *delta.Table
		attrs string
	}{
		{"fresh files under the default settle window", func(t *testing.T) *delta.Table {
			return tabletest.NewTableWith(t, "file://"+t.TempDir(), tabletest.Spec{Fresh: true}, tabletest.Batches(22, 10)...)
		}, `strategy = "auto"`},
		{"a Spark DV table with caps and a small target", func(t *testing.T) *delta.Table {
			return tabletest.CopyFixture(t, "dv-large-multi-dv-per-file")
		}, "target_file_size = \"4KiB\"\n  max_jobs_per_run = 2\n  job_order = \"bytes-asc\""},
		{"a partitioned Spark table, binpack", func(t *testing.T) *delta.Table {
			return tabletest.CopyFixture(t, "dv-partitioned-with-checkpoint")
		}, "strategy = \"binpack\"\n  settle_window = \"0s\""}, // the same jobs as plan URL, but binpack requested, not auto
	} {
		t.Run(tc.name, func(t *testing.T) {
			tbl := tc.table(t)
			dir := noopPolicyDir(t, tbl, tc.attrs)
			cli := func(args ...string) (pl planner.CompactionPlan) {
				t.Helper()
				runCLI(t, &pl, args...)
				return pl
			}
			got := cli("plan", "--policies", dir, "--table", "t")
			td := startLoggedDaemon(t, dir)
			code, body := get(t, td.base+"/tables/t/plan")
			if code != http.StatusOK {
				t.Fatalf("GET plan: %d %s", code, body)
			}
			var want planner.CompactionPlan
			if err := json.Unmarshal([]byte(body), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				a, _ := json.MarshalIndent(got, "", " ")
				t.Fatalf("plan --policies:\n%s\n/tables/t/plan:\n%s", a, body)
			}
			// The URL given beside --policies must be the policy's.
			if again := cli("plan", "--policies", dir, "--table", "t", strings.TrimPrefix(tbl.URL, "file://")); !reflect.DeepEqual(again, want) {
				t.Errorf("plan --policies with the table's path is another plan")
			}
			if plain := cli("plan", tbl.URL); reflect.DeepEqual(plain, want) {
				t.Errorf("plan URL (the command line's defaults) is the daemon's plan")
			}
		})
	}
}

func TestPlanWithPoliciesRefusesWhatThePolicyDoesNotSay(t *testing.T) {
	tbl := tabletest.NewTable(t, "file://"+t.TempDir(), tabletest.IDRange(0, 10))
	dir := noopPolicyDir(t, tbl, "")
	other := t.TempDir()
	writePolicy(t, other, "a.hcl", fmt.Sprintf("table \"a\" {\n  url = %q\n}\ntable \"b\" {\n  url = %q\n}\n", tbl.URL, tbl.URL+"-b"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--policies", dir, "--strategy", "binpack"}, "--strategy cannot be combined with --policies"},
		{[]string{"compact", "--policies", dir, "--min-file-size", "1MiB"}, "--min-file-size cannot be combined with --policies"},
		{[]string{"plan", "--policies", dir, "--table", "nope"}, `no table "nope" (it has: t)`},
		{[]string{"plan", "--policies", other}, "has 2 tables (a, b): name one with --table"},
		{[]string{"plan", "--policies", dir, t.TempDir()}, "is not the url of policy t"},
		{[]string{"plan", "--table", "t", tbl.URL}, "--table names a table of --policies DIR"},
	} {
		var stdout, stderr bytes.Buffer
		if code := mainExit(context.Background(), tc.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}
