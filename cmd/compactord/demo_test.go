package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestTheDemoCompactsAndReconcilesTheRacingDelete(t *testing.T) {
	dir := t.TempDir()
	var out, errb strings.Builder
	// Default flags: the report on stdout, no daemon log lines beside it.
	args := []string{"demo", "--dir", dir, "--commits", "5", "--files-per-commit", "3", "--rows", "40"}
	if code := mainExit(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("demo exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	got := out.String()
	// 15 files x 40 rows = 600 ids; id % 10 == 3 deletes 60 of them.
	for _, want := range []string{
		"wrote 15 small files in 5 append commits (600 rows)",
		"race: a DELETE of 60 rows (id % 10 == 3) committed version 6 while the compaction was about to commit version 6",
		"compaction: read version 5, lost the race, reconciled 15 source deletion vectors (60 rows) onto its output, committed version 7",
		"content check: OK, 540 rows",
	} {
		if !strings.Contains(got, want) {
			t.Fatalf("demo output lacks %q:\n%s", want, got)
		}
	}
	for _, re := range []string{`data files\s+15\s+1\n`, `live rows\s+600\s+540\n`, `deletions reconciled\s+0\s+60\n`} {
		if !regexp.MustCompile(re).MatchString(got) {
			t.Fatalf("demo output does not match %s:\n%s", re, got)
		}
	}
	if strings.Contains(errb.String(), "[INFO]") {
		t.Errorf("the demo wrote info log lines by default, which interleave with its report on a terminal:\n%s", errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "policies", "events.hcl")); err != nil {
		t.Fatal(err)
	}
	// A second demo into the same dir refuses to overwrite the table.
	if code := mainExit(context.Background(), args, &out, &errb); code != 1 {
		t.Fatalf("second demo exit %d", code)
	}
}
