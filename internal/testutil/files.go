package testutil

import (
	"io/fs"
	"path/filepath"
	"testing"
)

// Files returns every regular file below dir as a set of paths relative
// to dir, slash-separated.
func Files(t testing.TB, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
