package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// SharedDir returns the absolute path of ../shared beside the repository
// root (the project's shared documents and test tables). It fails the test
// when the directory cannot be found.
func SharedDir(t testing.TB) string {
	t.Helper()
	shared := filepath.Join(filepath.Dir(RepoRoot(t)), "shared")
	if _, err := os.Stat(shared); err != nil {
		t.Fatalf("shared directory not found beside the repository: %v", err)
	}
	return shared
}

// RepoRoot returns the absolute path of the repository root (the directory
// of go.mod above the test's working directory).
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("repository root (go.mod) not found")
		}
		dir = parent
	}
}

// DeltaTable returns the absolute path of a Delta test table root
// (../shared/testdata/delta/<name>/delta).
func DeltaTable(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(SharedDir(t), "testdata", "delta", name, "delta")
}

// CopyDeltaTable copies the Delta test table name (DeltaTable) into a fresh
// temp directory and returns the copy's root: tests never write to the
// shared tree.
func CopyDeltaTable(t testing.TB, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dst, os.DirFS(DeltaTable(t, name))); err != nil {
		t.Fatalf("copy test table %s: %v", name, err)
	}
	return dst
}

// DeltaTestdata returns the absolute path of ../shared/testdata/delta.
func DeltaTestdata(t testing.TB) string {
	t.Helper()
	return filepath.Join(SharedDir(t), "testdata", "delta")
}

// Deps returns the import paths that the packages matched by patterns
// (default ".": the package under test) depend on, themselves included
// (`go list -deps`, run in the test's directory). It fails the test when go
// list fails or lists nothing.
func Deps(t testing.TB, patterns ...string) []string {
	t.Helper()
	if len(patterns) == 0 {
		patterns = []string{"."}
	}
	out, err := exec.Command("go", append([]string{"list", "-deps"}, patterns...)...).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	return deps
}

// DuckScript returns node and the absolute path of a script of
// tools/duckcheck (the DuckDB cross-checks; scripts/test.d/duckdb.sh
// installs its npm package). It skips the test when node or the package is
// missing, except under CI, where that fails it.
func DuckScript(t testing.TB, name string) (node, script string) {
	t.Helper()
	dir := filepath.Join(RepoRoot(t), "tools", "duckcheck")
	script = filepath.Join(dir, name)
	_, statErr := os.Stat(filepath.Join(dir, "node_modules", "@duckdb", "node-api"))
	node, lookErr := exec.LookPath("node")
	if statErr != nil || lookErr != nil {
		msg := "DuckDB cross-check needs node and `npm ci` in tools/duckcheck (scripts/test.d/duckdb.sh installs it)"
		if os.Getenv("CI") != "" {
			t.Fatalf("%s; under CI it must be installed: %v %v", msg, statErr, lookErr)
		}
		t.Skip(msg)
	}
	return node, script
}
