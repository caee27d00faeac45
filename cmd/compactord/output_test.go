package main

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/retention"
)

// A committed compaction says "committed" once, and counts its one job in
// the singular.
func TestCompactSaysCommittedOnceAndOneJob(t *testing.T) {
	dir := testutil.CopyDeltaTable(t, "small-files-merge-update-delete")
	var out, errOut bytes.Buffer
	if err := commandNamed("compact").exec(context.Background(), []string{"file://" + dir}, &out, &errOut); err != nil {
		t.Fatalf("compact: %v (%s)", err, errOut.String())
	}
	first, _, _ := strings.Cut(out.String(), "\n")
	if !strings.HasPrefix(first, "committed version ") || strings.Contains(first, "committed: committed") {
		t.Errorf("first line %q, want it to start \"committed version N\"", first)
	}
	if !strings.Contains(first, ": 1 job, ") {
		t.Errorf("first line %q, want \"1 job\" (the table's five small files make one job)", first)
	}
}

func TestPluralCountsInTheSingularOnlyForOne(t *testing.T) {
	for n, want := range map[int]string{0: "0 jobs", 1: "1 job", 2: "2 jobs"} {
		if got := plural(n, "job"); got != want {
			t.Errorf("plural(%d) = %q, want %q", n, got, want)
		}
	}
}

// A bad flag prints the usage, then a blank line, then the error: the
// error does not run into the last flag's description.
func TestABadFlagsErrorComesAfterTheUsageAndABlankLine(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := mainExit(context.Background(), []string{"inspect", "--bogus"}, &out, &errOut); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	s := errOut.String()
	if !strings.Contains(s, "\n\ncompactord inspect: usage: flag provided but not defined: -bogus\n") {
		t.Errorf("stderr does not end with a blank line and the error:\n%s", s)
	}
	// Asked-for help prints the usage only.
	out.Reset()
	if code := mainExit(context.Background(), []string{"inspect", "-h"}, &out, &errOut); code != 0 || strings.HasSuffix(out.String(), "\n\n") {
		t.Errorf("-h: exit %d, usage ends %q", code, out.String()[max(0, out.Len()-20):])
	}
}

// The totals of an expire dry run add up with its per-partition lines, and
// a null partition value is shown as null, as inspect and the table page
// show it.
func TestExpireDryRunTotalsAddUpAndShowNullPartitionsAsNull(t *testing.T) {
	res := &retention.Result{DryRun: true, ReadVersion: 3, RowsDeleted: 40, Predicate: "`d` < DATE '2024-01-01'",
		FilesRemoved: 4, FilesAdded: 3, FilesWithNewDV: 1,
		Partitions: []retention.PartitionDeletes{
			{Partition: "k=__HIVE_DEFAULT_PARTITION__", Rows: 10, FilesRemoved: 1},
			{Partition: "k=a", Rows: 30, FilesRewritten: 3, FilesWithNewDV: 1},
		}}
	var out bytes.Buffer
	printExpire(&out, "file:///t", res)
	s := out.String()
	for _, want := range []string{
		"files removed 4 (1 wholly expired, 3 rewritten), files with a new deletion vector 1, files added 3",
		"k=null: 10 rows; 1 file removed (1 wholly expired, 0 rewritten), 0 with a new deletion vector",
		"k=a: 30 rows; 3 files removed (0 wholly expired, 3 rewritten), 1 with a new deletion vector",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("dry run lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "__HIVE_DEFAULT_PARTITION__") {
		t.Errorf("a null partition shown as Hive's directory name:\n%s", s)
	}
}

// A vacuum right after a compaction deletes nothing and says why: the
// compacted-away files are protected by the retention, until when.
func TestAVacuumThatDeletesNothingSaysWhatIsProtectedUntilWhen(t *testing.T) {
	dir := testutil.CopyDeltaTable(t, "small-files-merge-update-delete")
	var out, errOut bytes.Buffer
	if err := commandNamed("compact").exec(context.Background(), []string{"file://" + dir}, &out, &errOut); err != nil {
		t.Fatalf("compact: %v (%s)", err, errOut.String())
	}
	for _, args := range [][]string{{"file://" + dir}, {"file://" + dir, "--dry-run"}} {
		out.Reset()
		before := time.Now().UTC()
		if err := commandNamed("vacuum").exec(context.Background(), args, &out, &errOut); err != nil {
			t.Fatalf("vacuum %v: %v (%s)", args, err, errOut.String())
		}
		// The copy's files that no version needs are as new as the copy:
		// protected too, and counted apart.
		m := regexp.MustCompile(`\n  (\d+) files protected until (\S+) \(5 removed inside the 7d retention, (\d+) that no version needs but modified inside it`).FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("vacuum %v does not say what it kept:\n%s", args, out.String())
		}
		if all, unneeded := atoi(t, m[1]), atoi(t, m[3]); unneeded == 0 || all != 5+unneeded {
			t.Errorf("%d files protected, %d of them unneeded; want the 5 removed ones and the others apart", all, unneeded)
		}
		until, err := time.Parse("2006-01-02T15:04:05Z", m[2])
		if err != nil || until.Before(before.Add(7*24*time.Hour-time.Hour)) || until.After(before.Add(7*24*time.Hour+time.Minute)) {
			t.Errorf("protected until %s (%v), want about 7 days from %s", m[2], err, before)
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// humanSize matches the one size format (units.FormatBytes).
var humanSize = `\d+(\.\d)? (B|KiB|MiB|GiB)`

func TestHumanOutputUsesTheOneSizeFormat(t *testing.T) {
	for _, c := range []struct {
		name    string
		fixture string
		run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
		args    []string
		want    string
	}{
		{"compact", "ckpt-v2-json-sidecars-101-files", commandNamed("compact").exec, nil, `101 files removed, 1 added, ` + humanSize + ` read, ` + humanSize + ` written`},
		{"checkpoint", "dv-basic-no-checkpoint", commandNamed("checkpoint").exec, nil, `\d+ expired\), ` + humanSize + `, `},
		{"vacuum dry run", "dbr-optimize-dv-cdc-logcompaction", commandNamed("vacuum").exec, []string{"--dry-run", "--retention", "0s", "--force-retention"}, `\t` + humanSize + `\t.*\n(.*\n)*dry run \(full\): would delete \d+ files, ` + humanSize + ` `},
		{"inspect", "ckpt-v2-json-sidecars-101-files", commandNamed("inspect").exec, nil, `files +101 \(53\.3 KiB\)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			tbl := tabletest.CopyFixture(t, c.fixture)
			var out, errOut bytes.Buffer
			if err := c.run(context.Background(), append([]string{tbl.URL}, c.args...), &out, &errOut); err != nil {
				t.Fatalf("%v (%s)", err, errOut.String())
			}
			if !regexp.MustCompile(c.want).MatchString(out.String()) {
				t.Errorf("output lacks %q:\n%s", c.want, out.String())
			}
			if regexp.MustCompile(`\d bytes\b`).MatchString(out.String()) || regexp.MustCompile(`\d(B|KiB|MiB|GiB)\b`).MatchString(out.String()) {
				t.Errorf("a size not in the one format:\n%s", out.String())
			}
		})
	}
}
