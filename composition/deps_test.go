package composition

import (
	"strings"
	"testing"

	"github.com/compactord/compactord/internal/testutil"
)

// The composition record is shared by the writer and commit, so it must be
// a leaf: it imports no package of this module (and so no storage or file
// format).
func TestCompositionIsALeaf(t *testing.T) {
	const self = "github.com/compactord/compactord/composition"
	seen := false
	for _, d := range testutil.Deps(t) {
		switch {
		case d == self:
			seen = true
		case strings.HasPrefix(d, "github.com/compactord/compactord/"):
			t.Errorf("composition depends on %s", d)
		case strings.Contains(d, "parquet-go") || strings.Contains(d, "gocloud.dev"):
			t.Errorf("composition depends on storage or a file format: %s", d)
		}
	}
	if !seen {
		t.Fatalf("go list -deps did not list %s itself", self)
	}
}
