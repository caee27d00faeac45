package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compactord/compactord/internal/testutil"
)

// A negative --version is a usage error, not the latest version: checkpoint
// writes nothing, cat and inspect print nothing.
func TestANegativeVersionIsRefusedByEveryCommandThatTakesOne(t *testing.T) {
	table := testutil.CopyDeltaTable(t, "dv-small")
	logDir := filepath.Join(table, "_delta_log")
	for _, cmd := range []string{"checkpoint", "cat", "inspect"} {
		for _, v := range []string{"-5", "-1", "x", "1.5"} {
			var out, errb strings.Builder
			code := mainExit(context.Background(), []string{cmd, "--version", v, table}, &out, &errb)
			if code != 2 {
				t.Errorf("%s --version %s: exit %d, want 2 (usage); stdout:\n%s", cmd, v, code, out.String())
			}
			if out.Len() != 0 {
				t.Errorf("%s --version %s printed a result:\n%s", cmd, v, out.String())
			}
			if !strings.Contains(errb.String(), `invalid value "`+v+`" for flag -version`) {
				t.Errorf("%s --version %s: stderr does not say why:\n%s", cmd, v, errb.String())
			}
		}
		var out, errb strings.Builder
		if code := mainExit(context.Background(), []string{cmd, "--version", "0", table}, &out, &errb); code != 0 {
			t.Errorf("%s --version 0: exit %d: %s", cmd, code, errb.String())
		}
	}
	if !strings.Contains(strings.Join(dirNames(t, logDir), " "), ".checkpoint.parquet") {
		t.Fatal("checkpoint --version 0 wrote no checkpoint: the accepted case proves nothing")
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// A negative count (deletes or reads in flight, files, partitions listed)
// is a usage error naming the flag, not silently a default; the table is
// not touched.
func TestANegativeCountIsRefused(t *testing.T) {
	table := testutil.CopyDeltaTable(t, "dv-small")
	for _, args := range [][]string{
		{"vacuum", "--concurrency", "-1"},
		{"cleanup-log", "--concurrency", "-4"},
		{"backfill-stats", "--concurrency", "-1"},
		{"backfill-stats", "--max-files", "-1"},
		{"inspect", "--partitions", "-2"},
	} {
		wantUsageError(t, append(args, table), "usage: --"+strings.TrimPrefix(args[1], "--")+" "+args[2]+": must be 0 or more")
	}
}

// wantUsageError runs the command line args and wants exit 2 (usage),
// nothing on stdout and want on stderr.
func wantUsageError(t *testing.T, args []string, want string) {
	t.Helper()
	var out, errb strings.Builder
	code := mainExit(context.Background(), args, &out, &errb)
	if code != 2 || out.Len() != 0 || !strings.Contains(errb.String(), want) {
		t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", args, code, out.String(), errb.String(), want)
	}
}

// A size without a unit is refused by every size flag (128 is not 128
// bytes), 0 (the default) and an explicit "B" are not; nothing is printed.
func TestASizeFlagWithoutAUnitIsRefused(t *testing.T) {
	table := testutil.CopyDeltaTable(t, "dv-small")
	for _, args := range [][]string{
		{"plan", "--target-file-size", "128"},
		{"compact", "--target-file-size", "128"},
		{"plan", "--min-file-size", "64"},
		{"inspect", "--small-file-size", "64"},
	} {
		wantUsageError(t, append(args, table), "usage: "+args[1]+": "+args[2]+": give a unit, e.g. "+args[2]+"MiB")
	}
	for _, args := range [][]string{
		{"plan", "--target-file-size", "0"},
		{"plan", "--target-file-size", "1048576B"},
		{"inspect", "--small-file-size", "1 MiB"},
	} {
		var out, errb strings.Builder
		if code := mainExit(context.Background(), append(args, table), &out, &errb); code != 0 {
			t.Errorf("%v: exit %d: %s", args, code, errb.String())
		}
	}
}

// --workers 0 or less is refused, not silently the default of 2.
func TestRunRefusesWorkersBelowOne(t *testing.T) {
	for _, n := range []string{"0", "-1", "257"} {
		_, err := parseDaemonFlags(commandNamed("run").flags(context.Background(), &strings.Builder{}), []string{"--policies", t.TempDir(), "--workers", n})
		if want := "--workers " + n + ": want 1 to 256 runs at once"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--workers %s: err = %v, want %q", n, err, want)
		}
	}
	if o, err := parseDaemonFlags(commandNamed("run").flags(context.Background(), &strings.Builder{}), []string{"--policies", t.TempDir(), "--workers", "3"}); err != nil || o.Workers != 3 {
		t.Fatalf("--workers 3: %+v, %v", o.Workers, err)
	}
}

// expire says what is wrong with its arguments, not only its usage line.
func TestExpireSaysWhichArgumentIsWrong(t *testing.T) {
	table := testutil.CopyDeltaTable(t, "dv-small")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{table, "--column", "value", "--before", "2020-01-01", "--older-than", "1d"}, "give --before or --older-than, not both"},
		{[]string{table, "--before", "2020-01-01"}, "--column is required"},
		{[]string{table, "--column", "value"}, "give the cutoff: --before VALUE (e.g. 2021-03-01) or --older-than AGE (e.g. 90d)"},
		{[]string{"--column", "value", "--older-than", "1d"}, "give the table URL"},
	} {
		wantUsageError(t, append([]string{"expire"}, c.args...), "compactord expire: usage: "+c.want)
	}
}

// A subcommand missing or unknown is a usage error that says what the
// command takes, once (not "usage: usage:").
func TestTheClusteringCommandsSayWhatTheyTakeOnce(t *testing.T) {
	table := testutil.CopyDeltaTable(t, "dv-small")
	for _, args := range [][]string{{"clustering"}, {"clustering", "advice", table}, {"predicates"}, {"predicates", "add", table}} {
		var out, errb strings.Builder
		code := mainExit(context.Background(), args, &out, &errb)
		msg := errb.String()
		if code != 2 || out.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q; want 2 and nothing", args, code, out.String())
		}
		if strings.Contains(msg, "usage: usage") || !strings.Contains(msg, "takes") || !strings.Contains(msg, "usage: compactord "+args[0]+" ") {
			t.Errorf("%v: stderr does not say once what the command takes:\n%s", args, msg)
		}
	}
}
