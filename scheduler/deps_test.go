package scheduler

import (
	"strings"
	"testing"

	"github.com/compactord/compactord/internal/testutil"
)

// The scheduler decides when, never how: no file format may reach it or its
// subpackages (the lease), not even through a package they import.
// `go list -deps` is the build's own answer to what they link.
func TestTheSchedulerDependsOnNoFileFormat(t *testing.T) {
	forbidden := []string{
		"github.com/parquet-go/",
		"github.com/RoaringBitmap/",
		"github.com/compactord/compactord/delta",
		"github.com/compactord/compactord/writer",
		"github.com/compactord/compactord/planner",
		"github.com/compactord/compactord/commit",
	}
	for _, d := range testutil.Deps(t, "./...") {
		for _, f := range forbidden {
			if strings.HasPrefix(d, f) {
				t.Errorf("scheduler depends on %s", d)
			}
		}
	}
}
