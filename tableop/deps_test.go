package tableop

import (
	"strings"
	"testing"

	"github.com/compactord/compactord/internal/testutil"
)

// The seam knows no policy file and no file format: the operations bind it
// to policies.Policy and *delta.Table, so neither reaches it, nor the
// planner, the writer or a parquet or bitmap library through them.
// `go list -deps` is the build's own answer to what it links.
func TestTheOperationsSeamDependsOnNoPolicyFileAndNoFileFormat(t *testing.T) {
	forbidden := []string{
		"github.com/parquet-go/",
		"github.com/RoaringBitmap/",
		"github.com/compactord/compactord/policies",
		"github.com/compactord/compactord/delta",
		"github.com/compactord/compactord/planner",
		"github.com/compactord/compactord/writer",
		"github.com/compactord/compactord/commit",
	}
	for _, d := range testutil.Deps(t, ".") {
		for _, f := range forbidden {
			if d == f || strings.HasPrefix(d, strings.TrimSuffix(f, "/")+"/") {
				t.Errorf("tableop depends on %s", d)
			}
		}
	}
}
