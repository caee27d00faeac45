package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/internal/testutil/tabletest"
)

// `compactord expire` sweeps the dead attempts of killed runs at its start
// (--attempt-stale-after shortens the window) and says so on stdout, in the
// line `compact` prints, and in its JSON; a record within the window stays
// and nothing is said. A bad window is a usage error.
func TestExpireSweepsAndReportsTheDeadAttemptsOfKilledRuns(t *testing.T) {
	const line = "swept 1 dead attempts: 1 uncommitted objects deleted"
	cases := []struct {
		name  string
		flags []string
		swept bool
	}{
		{name: "ten minutes old, default 1h window: live", flags: nil},
		{name: "ten minutes old, 5m window: dead", flags: []string{"--attempt-stale-after", "5m"}, swept: true},
		{name: "json, 5m window: dead", flags: []string{"--attempt-stale-after", "5m", "--json"}, swept: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tbl := tabletest.NewTable(t, "file://"+filepath.ToSlash(dir), tabletest.IDRange(0, 10), tabletest.IDRange(10, 10))
			orphan, err := tabletest.WriteDataFile(t, tbl, tabletest.IDRange(100, 5)).Key()
			if err != nil {
				t.Fatal(err)
			}
			record := tabletest.KilledAttempt(t, tbl, "retention", orphan)
			last := time.Now().Add(-10 * time.Minute)
			if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(record)), last, last); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			args := append([]string{"expire", tbl.URL, "--column", "id", "--epoch-unit", "days", "--before", "5"}, tc.flags...)
			if code := mainExit(context.Background(), args, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
			}
			if slices.Contains(tc.flags, "--json") {
				var out struct{ SweptAttempts, SweptObjects int64 }
				if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
					t.Fatalf("%v in %s", err, stdout.String())
				}
				if out.SweptAttempts != 1 || out.SweptObjects != 1 {
					t.Errorf("JSON sweptAttempts %d, sweptObjects %d; want 1 and 1", out.SweptAttempts, out.SweptObjects)
				}
			} else if got := strings.Contains(stdout.String(), line); got != tc.swept {
				t.Errorf("stdout says %q: %v, want %v:\n%s", line, got, tc.swept, stdout.String())
			}
			after := tabletest.StoreObjects(t, tbl)
			if after[orphan] == tc.swept || after[record] == tc.swept {
				t.Errorf("orphan exists %v, record exists %v after the run; want %v", after[orphan], after[record], !tc.swept)
			}
			tabletest.WantIDs(t, tbl, tabletest.IDSet(tabletest.IDRange(5, 15)))
		})
	}
	tbl := tabletest.NewTable(t, "file://"+filepath.ToSlash(t.TempDir()), tabletest.IDRange(0, 10))
	var stderr bytes.Buffer
	for _, bad := range []string{"0", "soon"} {
		stderr.Reset()
		args := []string{"expire", tbl.URL, "--column", "id", "--epoch-unit", "days", "--before", "5", "--attempt-stale-after", bad}
		if code := mainExit(context.Background(), args, io.Discard, &stderr); code != 2 {
			t.Errorf("--attempt-stale-after %s: exit %d, want 2 (usage); stderr:\n%s", bad, code, stderr.String())
		}
	}
}
