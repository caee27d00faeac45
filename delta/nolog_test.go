package delta

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/testutil"
)

// A _delta_log that cannot be read lists empty through a local bucket;
// the error is the permission error, not "not a Delta table?".
func TestAnUnreadableLogShowsThePermissionError(t *testing.T) {
	if testutil.RunUnprivileged(t) {
		return
	}
	dir := testutil.CopyDeltaTable(t, "dv-small")
	logDir := filepath.Join(dir, "_delta_log")
	if err := os.Chmod(logDir, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(logDir, 0o755) })
	tbl := openDir(t, dir)
	for name, load := range map[string]func() error{
		"LoadSnapshot":  func() error { _, err := LoadSnapshot(context.Background(), tbl, -1); return err },
		"LatestVersion": func() error { _, err := LatestVersion(context.Background(), tbl); return err },
	} {
		err := load()
		want := "table file://" + dir + ": cannot read _delta_log/: open " + logDir + ": permission denied"
		if !errors.Is(err, fs.ErrPermission) || errors.Is(err, logpath.ErrVersionNotFound) || err.Error() != want {
			t.Errorf("%s: err = %v, want %q", name, err, want)
		}
	}
}

// A URL one level off a table (its _delta_log, its parent directory) asks
// "did you mean" with the table's URL.
func TestAURLBesideATableAsksDidYouMean(t *testing.T) {
	parent := t.TempDir()
	one := testutil.CopyDeltaTable(t, "dv-small")
	if err := os.Rename(one, filepath.Join(parent, "events")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ url, want string }{
		{"file://" + parent + "/events/_delta_log", "(not a Delta table: this is a table's log; did you mean file://" + parent + "/events?)"},
		{"file://" + parent + "/events/_delta_log/", "(not a Delta table: this is a table's log; did you mean file://" + parent + "/events?)"},
		{"file://" + parent, "(not a Delta table: a table is under it; did you mean file://" + parent + "/events?)"},
	} {
		tbl, err := OpenTable(context.Background(), c.url)
		if err != nil {
			t.Fatal(err)
		}
		_, err = LoadSnapshot(context.Background(), tbl, -1)
		tbl.Close()
		if !errors.Is(err, logpath.ErrVersionNotFound) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.url, err, c.want)
		}
	}
	// Two tables under it are both named; a directory of no table gets
	// the plain question.
	other := testutil.CopyDeltaTable(t, "dv-basic-no-checkpoint")
	if err := os.Rename(other, filepath.Join(parent, "orders")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(parent, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := LoadSnapshot(context.Background(), openDir(t, parent), -1)
	if want := "(not a Delta table: tables are under it; did you mean one of file://" + parent + "/events, file://" + parent + "/orders?)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("two tables: err = %v, want %q", err, want)
	}
	_, err = LoadSnapshot(context.Background(), openDir(t, filepath.Join(parent, "notes")), -1)
	if want := "no commits or checkpoints in _delta_log/ (not a Delta table?)"; err == nil || !strings.HasSuffix(strings.TrimSuffix(err.Error(), ": "+logpath.ErrVersionNotFound.Error()), want) {
		t.Errorf("an empty directory: err = %v, want %q", err, want)
	}
}
