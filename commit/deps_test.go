package commit

import (
	"testing"

	"github.com/compactord/compactord/internal/testutil"
)

// commit receives rewritten jobs as CompactionJob values and never sees the
// writer: the dependency would let commit rewrite data, and the writer's
// parquet machinery has no business in the commit path.
func TestCommitDoesNotImportWriter(t *testing.T) {
	for _, d := range testutil.Deps(t) {
		if d == "github.com/compactord/compactord/writer" {
			t.Fatalf("commit depends on %s", d)
		}
	}
}
