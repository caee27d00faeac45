package tableop

import (
	"slices"
	"strings"
	"testing"

	"github.com/compactord/compactord/internal/testutil"
)

// The seam knows no policy file and no file format: the operations bind it
// to policies.Policy and *delta.Table, so neither reaches it, nor the
// planner, the writer or a parquet or bitmap library through them.
// `go list -deps` is the build's own answer to what it links.
func TestTheOperationsSeamDependsOnNoPolicyFileAndNoFileFormat(t *testing.T) {
	const ours = "github.com/compactord/compactord/"
	forbidden := []string{"github.com/parquet-go", "github.com/RoaringBitmap",
		ours + "policies", ours + "delta", ours + "planner", ours + "writer", ours + "commit"}
	under := func(dep string) func(string) bool {
		return func(root string) bool { return dep == root || strings.HasPrefix(dep, root+"/") }
	}
	for _, dep := range testutil.Deps(t, ".") {
		if slices.ContainsFunc(forbidden, under(dep)) {
			t.Errorf("tableop depends on %s", dep)
		}
	}
}
