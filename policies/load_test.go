package policies

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/internal/testutil"
)

const minimal = `table "events" {
  url      = "file:///data/events"
  schedule = "@every 1m"
  strategy = "auto"
}
`

func TestTheMinimalFileWorksAsWrittenWithEverythingElseDefaulted(t *testing.T) {
	set, err := Parse(map[string][]byte{"events.hcl": []byte(minimal)})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Tables) != 1 {
		t.Fatalf("tables = %d", len(set.Tables))
	}
	want := DefaultPolicy()
	want.Name = "events"
	want.URL = "file:///data/events"
	want.Schedule = "@every 1m"
	want.Strategy = StrategyAuto
	want.Source = "events.hcl:1:1"
	if got := set.Tables[0]; !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	if !reflect.DeepEqual(set.Daemon, DefaultDaemon()) {
		t.Fatalf("daemon = %+v", set.Daemon)
	}
}

func TestAFullTableBlockDecodesEveryAttribute(t *testing.T) {
	src := `
table "orders" {
  url                    = "s3://bucket/orders"
  schedule               = "*/5 * * * *"
  strategy               = "zcube"
  enabled                = false
  concurrency            = 4
  compression            = "snappy"
  target_file_size       = "256MiB"
  min_file_size          = "64MB"
  max_deleted_rows_ratio = 0.3
  settle_window          = "10m"
  max_bytes_per_run      = "1GiB"
  max_jobs_per_run       = 7
  job_order              = "oldest-first"
  commit_every_jobs      = 3
  commit_interval        = "15m"
  clustering {
    columns                 = ["customer", "ts"]
    lightweight_column      = "ts"
    max_unclustered_bytes   = "2GiB"
    max_relative_file_range = 0.25
    min_cube_size           = "10GiB"
    cube_merge_min_cubes    = 6
  }
  triggers {
    small_files             = 10
    deleted_rows_ratio      = 0.1
    unclustered_bytes       = "512MiB"
    max_time_since_last_run = "2d"
  }
  retention {
    column     = "ts"
    older_than = "90d"
    time_zone  = "Europe/Paris"
  }
  checkpoint {
    catch_up   = false
    max_behind = 50
  }
  log_cleanup {
    enabled     = false
    concurrency = 4
  }
  fleet {
    quota = 0.75
    group = "etl"
  }
}
`
	set, err := Parse(map[string][]byte{"orders.hcl": []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	p := set.Tables[0]
	want := Policy{
		Name: "orders", URL: "s3://bucket/orders", Schedule: "*/5 * * * *", Strategy: StrategyZcube,
		Enabled: false, Concurrency: 4, Compression: "snappy",
		TargetFileSize: 256 * MiB, MinFileSize: 64 * MiB, MaxDeletedRowsRatio: 0.3,
		SettleWindow: 10 * time.Minute, MaxBytesPerRun: GiB, MaxJobsPerRun: 7, JobOrder: "oldest-first",
		CommitEveryJobs: 3, CommitInterval: 15 * time.Minute,
		Clustering: Clustering{Columns: []string{"customer", "ts"}, LightweightColumn: "ts",
			MaxUnclusteredBytes: 2 * GiB, MaxRelativeFileRange: 0.25, MinCubeSize: 10 * GiB, CubeMergeMinCubes: 6},
		Triggers: Triggers{SmallFiles: 10, DeletedRowsRatio: 0.1, UnclusteredBytes: 512 * MiB,
			MaxTimeSinceLastRun: 48 * time.Hour},
		Retention:  &Retention{Column: "ts", OlderThan: 90 * 24 * time.Hour, TimeZone: "Europe/Paris"},
		Checkpoint: Checkpoint{Enabled: true, CatchUp: false, MaxBehind: 50},
		LogCleanup: LogCleanup{Enabled: false, Concurrency: 4},
		Fleet:      Fleet{Quota: 0.75, Group: "etl"},
		Source:     "orders.hcl:2:1",
	}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("got  %+v\nwant %+v", p, want)
	}
}

func TestTableAttributesLayerOverDaemonDefaults(t *testing.T) {
	files := map[string][]byte{
		"daemon.hcl": []byte(`
daemon {
  poll    = "15s"
  workers = 3
  replica = "pod-a"
  attempt_stale_after = "10m"
}
defaults {
  target_file_size = "64MiB"
  min_file_size    = "32MiB"
  triggers {
    small_files = 5
  }
}
`),
		"a.hcl": []byte(`table "a" {
  url = "mem://a"
}`),
		"b.hcl": []byte(`table "b" {
  url              = "mem://b"
  target_file_size = "512MiB"
  triggers {
    deleted_rows_ratio = 0.5
  }
}`),
	}
	set, err := Parse(files)
	if err != nil {
		t.Fatal(err)
	}
	if set.Daemon.Poll != 15*time.Second || set.Daemon.Workers != 3 || set.Daemon.HTTP != DefaultDaemon().HTTP ||
		set.Daemon.Replica != "pod-a" || set.Daemon.LeaseTTL != time.Minute || set.Daemon.AttemptStaleAfter != 10*time.Minute {
		t.Fatalf("daemon = %+v", set.Daemon)
	}
	a, _ := set.Table("a")
	b, _ := set.Table("b")
	if a.TargetFileSize != 64*MiB || a.Triggers.SmallFiles != 5 || a.Triggers.DeletedRowsRatio != 0.05 {
		t.Fatalf("a = %+v", a)
	}
	if b.TargetFileSize != 512*MiB || b.MinFileSize != 32*MiB || b.Triggers.SmallFiles != 5 || b.Triggers.DeletedRowsRatio != 0.5 {
		t.Fatalf("b = %+v", b)
	}
}

func TestBadPoliciesAreReportedAtFileLineColumn(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want string
	}{
		{"unknown attribute", "table \"t\" {\n  url = \"mem://t\"\n  target_size = \"1GiB\"\n}\n",
			`t.hcl:3:3: Unsupported argument; An argument named "target_size" is not expected here`},
		{"unknown block", "table \"t\" {\n  url = \"mem://t\"\n  zorder {}\n}\n",
			`t.hcl:3:3: Unsupported block type; Blocks of type "zorder"`},
		{"unknown nested attribute", "table \"t\" {\n  url = \"mem://t\"\n  triggers {\n    small = 3\n  }\n}\n",
			`t.hcl:4:5: Unsupported argument; An argument named "small"`},
		{"bad strategy value", "table \"t\" {\n  url = \"mem://t\"\n  strategy = \"fast\"\n}\n",
			`t.hcl:3:3: Invalid value for strategy; strategy: unknown strategy: "fast"`},
		{"bad size", "table \"t\" {\n  url = \"mem://t\"\n  target_file_size = \"big\"\n}\n",
			`t.hcl:3:22: Invalid value for target_file_size; bad size "big"`},
		{"wrong type", "table \"t\" {\n  url = \"mem://t\"\n  concurrency = \"two\"\n}\n",
			`t.hcl:3:17: Invalid value for concurrency; want a whole number, got string`},
		{"bad cron", "table \"t\" {\n  url = \"mem://t\"\n  schedule = \"every minute\"\n}\n",
			`t.hcl:3:3: Invalid value for schedule`},
		{"relative url", "table \"t\" {\n  url = \"data/t\"\n}\n", `t.hcl:2:3: Invalid value for url; url: bad url: "data/t" is a relative path`},
		{"missing url", "table \"t\" {\n  strategy = \"auto\"\n}\n",
			`t.hcl:1:7: Invalid value for url; url: url is required`},
		{"ratio out of range", "table \"t\" {\n  url = \"mem://t\"\n  triggers {\n    deleted_rows_ratio = 2\n  }\n}\n",
			`t.hcl:4:5: Invalid value for triggers.deleted_rows_ratio`},
		{"an unknown retention time zone", "table \"t\" {\n  url = \"mem://t\"\n  retention {\n    column = \"ts\"\n    older_than = \"1d\"\n    time_zone = \"Mars/Olympus\"\n  }\n}\n",
			`Invalid value for retention.time_zone`},
		{"a cube merge of one cube", "table \"t\" {\n  url = \"mem://t\"\n  clustering {\n    cube_merge_min_cubes = 1\n  }\n}\n",
			`t.hcl:4:5: Invalid value for clustering.cube_merge_min_cubes`},
		{"zcube without columns", "table \"t\" {\n  url = \"mem://t\"\n  strategy = \"zcube\"\n}\n",
			`t.hcl:3:3: Invalid value for strategy; strategy: strategy needs clustering columns`},
		{"syntax error", "table \"t\" {\n  url = \n}\n", `t.hcl:2:9: `},
		{"top-level attribute", "url = \"mem://t\"\n", `t.hcl:1:1: Unsupported argument`},
		{"table without a name", "table {\n  url = \"mem://t\"\n}\n", `t.hcl:1:1: Missing table name`},
		{"negative commit batch", "table \"t\" {\n  url = \"mem://t\"\n  commit_every_jobs = -1\n}\n",
			`t.hcl:3:3: Invalid value for commit_every_jobs`},
		{"bad commit interval", "table \"t\" {\n  url = \"mem://t\"\n  commit_interval = \"soon\"\n}\n",
			`t.hcl:3:21: Invalid value for commit_interval`},
		{"an attempt window within a live run's heartbeats", "daemon {\n  attempt_stale_after = \"2m\"\n}\n",
			`t.hcl:2:3: Invalid value for attempt_stale_after; attempt_stale_after: value out of range: 2m0s (want >= 5m0s`},
		{"unknown executor kind", "table \"t\" {\n  url = \"mem://t\"\n  executor {\n    kind = \"spark\"\n  }\n}\n",
			`t.hcl:4:5: Invalid value for executor.kind`},
		{"executor without parallelism", "table \"t\" {\n  url = \"mem://t\"\n  executor {\n    kind = \"process\"\n    parallelism = 0\n  }\n}\n",
			`t.hcl:5:5: Invalid value for executor.parallelism`},
		{"retention without column", "table \"t\" {\n  url = \"mem://t\"\n  retention {\n    older_than = \"30d\"\n  }\n}\n",
			`t.hcl:3:3: Invalid value for retention.column`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(map[string][]byte{"t.hcl": []byte(c.src)})
			if err == nil {
				t.Fatal("no error")
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not *Error", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error\n%s\ndoes not contain\n%s", err, c.want)
			}
		})
	}
}

func TestDuplicateTablesAcrossFilesAreAnError(t *testing.T) {
	_, err := Parse(map[string][]byte{
		"a.hcl": []byte("table \"t\" {\n  url = \"mem://a\"\n}\n"),
		"b.hcl": []byte("table \"t\" {\n  url = \"mem://b\"\n}\n"),
	})
	if err == nil || !strings.Contains(err.Error(), `b.hcl:1:7: Duplicate table; Table "t" is already declared at a.hcl:1:7`) {
		t.Fatalf("err = %v", err)
	}
}

func TestTwoPoliciesOnOneTableAreAnError(t *testing.T) {
	_, err := Parse(map[string][]byte{
		"a.hcl": []byte("table \"a\" {\n  url = \"mem://x\"\n}\n"),
		"b.hcl": []byte("table \"b\" {\n  url = \"mem://x\"\n}\n"),
	})
	if err == nil || !strings.Contains(err.Error(), `b.hcl:2:3: Duplicate table url; Table "b" has the same url as table "a"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestEveryProblemInADirectoryIsReportedAtOnce(t *testing.T) {
	_, err := Parse(map[string][]byte{
		"a.hcl": []byte("table \"a\" {\n  url = \"mem://a\"\n  strategy = \"x\"\n}\n"),
		"b.hcl": []byte("table \"b\" {\n  url = \"mem://b\"\n  concurrency = 0\n}\n"),
	})
	if err == nil {
		t.Fatal("no error")
	}
	if got := len(err.(*Error).Diags); got != 2 {
		t.Fatalf("diagnostics = %d: %v", got, err)
	}
}

func TestValidateWrapsSentinelErrors(t *testing.T) {
	p := DefaultPolicy()
	p.Name, p.URL = "t", "mem://t"
	if err := p.Validate(); err != nil {
		t.Fatalf("default policy invalid: %v", err)
	}
	p.Strategy = "nope"
	if err := p.Validate(); !errors.Is(err, ErrBadStrategy) {
		t.Fatalf("err = %v", err)
	}
	d := DefaultDaemon()
	if err := d.Validate(); err != nil || d.AttemptStaleAfter != time.Hour {
		t.Fatalf("default daemon (attempt window %v) invalid: %v", d.AttemptStaleAfter, err)
	}
	d.Workers = 0
	if err := d.Validate(); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("err = %v", err)
	}
}

func TestWriteHCLReadsBackToTheSameSet(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"events.hcl": minimal,
		"orders.hcl": `table "orders" {
  url = "s3://b/orders"
  strategy = "lightweight"
  settle_window = "90s"
  max_bytes_per_run = "1000001 B"
  max_jobs_per_run = 7
  commit_every_jobs = 4
  commit_interval = "90s"
  clustering {
    columns = ["ts"]
  }
  triggers {
    small_files = 0
  }
  checkpoint {
    max_behind = 5
  }
  retention {
    column = "ts"
    older_than = "36h"
    data_skipping = false
  }
  executor {
    kind = "kubernetes"
    min_backlog_bytes = "100 GiB"
    parallelism = 16
    max_units = 200
  }
}`,
		"README.txt": "not a policy",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := roundTrip(t, set)
	for i := range set.Tables {
		set.Tables[i].Source = ""
		again.Tables[i].Source = ""
	}
	if !reflect.DeepEqual(set, again) {
		t.Fatalf("round trip differs:\n%+v\n%+v", set, again)
	}
}

func TestWriteHCLSaysWhatUnsetValuesMeanInsteadOfZeroBytes(t *testing.T) {
	set, _ := parseTables(t, minimal)
	again, out := roundTrip(t, set)
	if again.Tables[0].TargetFileSize != set.Tables[0].TargetFileSize {
		t.Errorf("target_file_size reads back as %d", again.Tables[0].TargetFileSize)
	}
	// Each line says what the unset value means; "0B" appears nowhere.
	for line, present := range map[string]bool{
		"  # target_file_size     = default (the table's delta.targetFileSize, else 128 MiB)\n": true,
		"  # max_bytes_per_run    = unlimited\n":                                                true,
		"  # max_jobs_per_run     = unlimited\n":                                                true,
		"  # commit_every_jobs    = off\n":                                                      true,
		"    # unclustered_bytes     = off\n":                                                   true,
		"    # max_behind = default (the table's delta.checkpointInterval)\n":                   true,
		"  min_file_size          = \"1 GiB\"\n":                                                true,
		"0B":                                                                                    false,
		`"0 B"`:                                                                                 false,
		"= 0\n":                                                                                 false,
	} {
		if strings.Contains(out, line) != present {
			t.Errorf("%q present %v, want %v:\n%s", line, !present, present, out)
		}
	}
}

func TestLoadDirOfAMissingDirectoryFails(t *testing.T) {
	if _, err := LoadDir(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Fatal("no error")
	}
}

func TestPlannerPolicyCarriesEveryPlanningAttribute(t *testing.T) {
	p := DefaultPolicy()
	p.Strategy = StrategyLightweight
	p.TargetFileSize = 64 * MiB
	p.Clustering.Columns = []string{"a.b", "c"}
	p.Clustering.LightweightColumn = "c"
	p.Clustering.CubeMergeMinCubes = -1
	now := time.Unix(1000, 0)
	pp := p.PlannerPolicy(now)
	if pp.Strategy != "lightweight" || pp.TargetFileSize != 64*MiB || !pp.Now.Equal(now) || pp.CubeMergeMinCubes != -1 ||
		!reflect.DeepEqual(pp.ClusteringColumns, [][]string{{"a", "b"}, {"c"}}) ||
		!reflect.DeepEqual(pp.LightweightColumn, []string{"c"}) ||
		pp.SettleWindow != p.SettleWindow || pp.JobOrder != "files-desc" {
		t.Fatalf("planner policy = %+v", pp)
	}
	if err := pp.Validate(); err != nil {
		t.Fatal(err)
	}
	p.Clustering.Columns = []string{"a", "b", "c", "d", "e"}
	p.Clustering.LightweightColumn = ""
	p.URL = "mem://x"
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "exceed the limit") {
		t.Fatalf("five clustering columns: err = %v", err)
	}
}

func TestAnExecutorBlockTakesItsDefaults(t *testing.T) {
	dir := t.TempDir()
	src := "table \"t\" {\n  url = \"mem://t\"\n  executor {\n    kind = \"process\"\n    min_backlog_bytes = \"1 GiB\"\n  }\n}\n"
	set, err := loadFile(t, dir, src)
	if err != nil {
		t.Fatal(err)
	}
	want := Executor{Kind: ExecutorProcess, MinBacklogBytes: GiB, Parallelism: DefaultExecutorParallelism, BackoffLimitPerIndex: DefaultExecutorBackoffLimitPerIndex}
	if got := set.Tables[0].Executor; got == nil || *got != want {
		t.Fatalf("executor = %+v, want %+v", got, want)
	}
}

func TestTwoSpellingsOfOneTableAreAnErrorAtTheSecondNamingTheFirst(t *testing.T) {
	for _, c := range []struct{ first, second string }{
		{"file:///data/t", "/data/t/"},
		{"/data/t", "file:///data/./t"},
		{"s3://b/p", "s3a://b/p/"},
		{"s3://b//p/./q", "s3://user:pw@b/p/q?secret_key=K"},
	} {
		_, err := Parse(map[string][]byte{
			"a.hcl": []byte(fmt.Sprintf("table \"a\" {\n  url = %q\n}\n", c.first)),
			"b.hcl": []byte(fmt.Sprintf("table \"b\" {\n  schedule = \"@hourly\"\n  url = %q\n}\n", c.second)),
		})
		want := `b.hcl:3:3: Duplicate table url; Table "b" has the same url as table "a" (at a.hcl:2:3)`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s then %s: err = %v, want %q", c.first, c.second, err, want)
			continue
		}
		if strings.Contains(err.Error(), "pw@") || strings.Contains(err.Error(), "=K") {
			t.Errorf("the error shows a credential: %v", err)
		}
	}
	if _, err := Parse(map[string][]byte{
		"a.hcl": []byte("table \"a\" {\n  url = \"s3://b/p\"\n}\n"),
		"b.hcl": []byte("table \"b\" {\n  url = \"s3://b/p2\"\n}\n"),
	}); err != nil {
		t.Fatalf("two tables: %v", err)
	}
}

func TestLoadDirOfAFileSaysToGiveItsDirectory(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "events.hcl")
	if err := os.WriteFile(file, []byte("table \"e\" {\n  url = \"mem://e\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadDir(file)
	var nd *NotDirError
	if !errors.As(err, &nd) || nd.Dir() != dir {
		t.Fatalf("err = %v, want a NotDirError naming %s", err, dir)
	}
	if want := file + " is a file, not a directory of .hcl files (its directory is " + dir + ")"; err.Error() != want {
		t.Fatalf("err = %q, want %q", err, want)
	}
}

func TestLoadDirOfAnEmptyDirectoryFailsNamingWhatItHolds(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadDir(dir); !errors.Is(err, ErrNoPolicies) || !strings.Contains(err.Error(), "it is empty") {
		t.Fatalf("empty directory: err = %v, want ErrNoPolicies", err)
	}
	for _, n := range []string{"events.HCL", "notes.txt", ".hidden.swp"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "old.hcl"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := LoadDir(dir)
	if !errors.Is(err, ErrNoPolicies) || !strings.Contains(err.Error(), "it holds events.HCL, notes.txt, old.hcl)") {
		t.Fatalf("err = %v, want ErrNoPolicies naming the entries that are not policies", err)
	}
}

func TestLoadDirOfAnUnreadableDirectoryShowsThePermissionError(t *testing.T) {
	if testutil.RunUnprivileged(t) {
		return
	}
	dir := filepath.Join(t.TempDir(), "policies")
	testutil.UnreadableDir(t, dir, map[string]string{"t.hcl": "table \"t\" {\n  url = \"mem://t\"\n}\n"})
	_, err := LoadDir(dir)
	if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "read policy directory "+dir) {
		t.Fatalf("err = %v, want the permission error naming the directory", err)
	}
}

// A size without a unit is 128 bytes to a parser and 128 MiB to whoever
// wrote it: policy files refuse it, quoted or not; only 0 needs none.
func TestASizeWithoutAUnitIsAnErrorExceptZero(t *testing.T) {
	for _, v := range []string{`128`, `"128"`, `134217728`, `1.5`} {
		wantParseError(t, "table \"t\" {\n  url = \"mem://t\"\n  target_file_size = "+v+"\n}\n", "t.hcl:3:22: Invalid value for target_file_size; "+strings.Trim(v, `"`)+": give a unit, e.g. "+strings.Trim(v, `"`)+"MiB")
	}
	_, byName := parseTables(t, "table \"t\" {\n  url = \"mem://t\"\n  max_bytes_per_run = 0\n  target_file_size = \"0\"\n  min_file_size = \"512 B\"\n}\n")
	if p := byName["t"]; p.MaxBytesPerRun != 0 || p.TargetFileSize != 0 || p.MinFileSize != 512 {
		t.Fatalf("policy = %+v", p)
	}
}
