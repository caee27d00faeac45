package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compactord/compactord/internal/testutil"
)

// expire on a copy of a Spark-written partitioned DV table: the rows with
// col1 < 10 are deleted with deletion vectors, and cat no longer shows them.
func TestExpireCommand(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "t")
	if err := os.CopyFS(dir, os.DirFS(testutil.DeltaTable(t, "dv-partitioned-with-checkpoint"))); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := runExpire(ctx, []string{dir, "--column", "col1", "--epoch-unit", "days", "--before", "10", "--json"}, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	var res struct {
		CommittedVersion int64  `json:"committedVersion"`
		Predicate        string `json:"predicate"`
		RowsDeleted      int64  `json:"rowsDeleted"`
		FilesWithNewDV   int    `json:"filesWithNewDV"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if res.CommittedVersion != 16 || res.RowsDeleted != 5 || res.FilesWithNewDV != 5 || res.Predicate != "`col1` < 10" {
		t.Fatalf("result %+v", res)
	}
	out.Reset()
	if err := runCat(ctx, []string{dir}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 30 {
		t.Fatalf("cat after expire: %d rows, want 35 - 5", len(lines))
	}
	for _, l := range lines {
		var row struct{ Col1 int64 }
		if err := json.Unmarshal([]byte(l), &row); err != nil {
			t.Fatal(err)
		}
		if row.Col1 < 10 {
			t.Fatalf("expired row still live: %s", l)
		}
	}
	// Bad usage is a usage error.
	err := runExpire(ctx, []string{dir, "--column", "col1"}, &out, &errOut)
	if !errors.Is(err, errUsage) {
		t.Fatalf("missing cutoff: got %v, want a usage error", err)
	}
}

func TestExpireDryRunPrintsPerPartitionAndCommitsNothing(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "t")
	if err := os.CopyFS(dir, os.DirFS(testutil.DeltaTable(t, "dv-partitioned-with-checkpoint"))); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := runExpire(ctx, []string{dir, "--column", "col1", "--epoch-unit", "days", "--before", "10", "--dry-run"}, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	text := out.String()
	for _, want := range []string{"dry run at version 15, nothing committed: would delete 5 rows where `col1` < 10", "part=1: 1 rows; 0 files removed, 1 with a new deletion vector"} {
		if !strings.Contains(text, want) {
			t.Errorf("dry run output does not say %q:\n%s", want, text)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "_delta_log", "00000000000000000016.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a dry run committed version 16 (stat err=%v)", err)
	}
	// A string column is refused by name and type.
	err := runExpire(ctx, []string{dir, "--column", "part", "--before", "2020-01-01"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "part has type integer") {
		t.Fatalf("integer column without --epoch-unit: %v", err)
	}
}
