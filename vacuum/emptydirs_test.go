package vacuum

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/compactord/compactord/internal/deletegate"
)

// The empty-directory pass of a local vacuum checks each directory with the
// deletion gate: a directory reached through a symbolic link (here one to
// a directory outside the table) and the log's own directories are left,
// a plain empty directory of the table goes.
func TestEmptyDirectoriesThroughALinkOrInTheLogAreNotRemoved(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	for _, d := range []string{filepath.Join(outside, "sub"), filepath.Join(root, "part=1"), filepath.Join(root, "_delta_log", "_sidecars")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	gate := deletegate.New(nil, deletegate.Options{Table: "file://" + root, LocalRoot: root})
	n := removeEmptyDirs(root, gate, []string{"link/sub/", "link/", "part=1/", "_delta_log/_sidecars/"}, nil)
	if n != 1 {
		t.Errorf("%d directories removed, want 1 (part=1)", n)
	}
	for _, keep := range []string{filepath.Join(outside, "sub"), filepath.Join(root, "link"), filepath.Join(root, "_delta_log", "_sidecars")} {
		if _, err := os.Lstat(keep); err != nil {
			t.Errorf("%s was removed: %v", keep, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "part=1")); !os.IsNotExist(err) {
		t.Errorf("the empty partition directory stays: %v", err)
	}
}
