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

func TestOpenTableResolvesURLsToTableRoots(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rel, err := filepath.Rel(mustGetwd(t), filepath.Join(dir, "rel"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		url     string
		wantURL string
		// onDisk is where the key "_delta_log/x.json" must land, if local.
		onDisk string
	}{
		{"file URL", "file://" + filepath.ToSlash(filepath.Join(dir, "a")), "file://" + filepath.ToSlash(filepath.Join(dir, "a")), filepath.Join(dir, "a", "_delta_log", "x.json")},
		{"plain absolute path", filepath.Join(dir, "b"), "file://" + filepath.ToSlash(filepath.Join(dir, "b")), filepath.Join(dir, "b", "_delta_log", "x.json")},
		{"relative path is made absolute", rel, "file://" + filepath.ToSlash(filepath.Join(dir, "rel")), filepath.Join(dir, "rel", "_delta_log", "x.json")},
		{"mem with prefix", "mem://bucket/some/table", "mem://bucket/some/table", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tbl, err := CreateTable(ctx, tc.url)
			if err != nil {
				t.Fatal(err)
			}
			defer tbl.Close()
			if tbl.URL != tc.wantURL {
				t.Errorf("URL = %q, want %q", tbl.URL, tc.wantURL)
			}
			if err := tbl.Bucket.WriteAll(ctx, "_delta_log/x.json", []byte("{}"), nil); err != nil {
				t.Fatal(err)
			}
			got, err := tbl.Bucket.ReadAll(ctx, "_delta_log/x.json")
			if err != nil || string(got) != "{}" {
				t.Fatalf("read back %q, %v", got, err)
			}
			if tc.onDisk != "" {
				if _, err := os.Stat(tc.onDisk); err != nil {
					t.Errorf("key not at %s: %v", tc.onDisk, err)
				}
				if _, err := os.Stat(tc.onDisk + ".attrs"); !os.IsNotExist(err) {
					t.Errorf("fileblob wrote a .attrs sidecar next to %s (err=%v)", tc.onDisk, err)
				}
			}
			if err := tbl.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if _, err := tbl.Bucket.ReadAll(ctx, "_delta_log/x.json"); err == nil {
				t.Error("the bucket still reads after Close")
			}
			if err := tbl.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
		})
	}
}

func TestOpenTableRejectsBadURLs(t *testing.T) {
	tests := []struct {
		name, url, wantErr string
	}{
		{"empty", "", "empty table URL"},
		{"unknown scheme", "hdfs://nn/table", `unsupported URL scheme "hdfs"`},
		{"file with host", "file://otherhost/tmp/t", "file:///absolute/path"},
		{"file with query", "file:///tmp/t?metadata=write", "no query parameters"},
		{"mem with unknown option", "mem://x?foo=1", `unsupported query parameter "foo"`},
		{"s3 without bucket", "s3:///prefix", "missing bucket name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tbl, err := OpenTable(context.Background(), tc.url)
			if err == nil {
				tbl.Close()
				t.Fatalf("OpenTable(%q) succeeded, want error containing %q", tc.url, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestMemTablesArePrivateToTheirTable(t *testing.T) {
	ctx := context.Background()
	a, err := OpenTable(ctx, "mem://same")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenTable(ctx, "mem://same")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := a.Log.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Bucket.Exists(ctx, "_delta_log/00000000000000000000.json"); err != nil || ok {
		t.Fatalf("second mem table sees the first one's commit (exists=%v, err=%v)", ok, err)
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

func TestOpenTableOnAMissingLocalPathIsAnErrorAndCreatesNothing(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	missing := filepath.Join(root, "x1", "y", "z")
	for _, url := range []string{missing, "file://" + filepath.ToSlash(missing)} {
		tbl, err := OpenTable(ctx, url)
		if err == nil {
			tbl.Close()
			t.Fatalf("OpenTable(%q) succeeded on a path that does not exist", url)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("OpenTable(%q) error %v does not wrap fs.ErrNotExist", url, err)
		}
		if !strings.Contains(err.Error(), missing) {
			t.Errorf("OpenTable(%q) error %q does not name the path", url, err)
		}
		if _, err := os.Stat(filepath.Join(root, "x1")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("OpenTable(%q) created %s (stat err=%v)", url, filepath.Join(root, "x1"), err)
		}
	}
	file := filepath.Join(root, "plain-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if tbl, err := OpenTable(ctx, file); err == nil {
		tbl.Close()
		t.Fatalf("OpenTable(%q) succeeded on a regular file", file)
	} else if !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("OpenTable on a regular file: %v, want it to say 'not a directory'", err)
	}
}

func TestCreateTableMakesTheLocalDirectory(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "new", "table")
	tbl, err := CreateTable(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("CreateTable did not create %s: %v", dir, err)
	}
}

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
