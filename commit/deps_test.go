package commit

import (
	"os/exec"
	"strings"
	"testing"
)

// commit receives rewritten jobs as CompactionJob values and never sees the
// writer: the dependency would let commit rewrite data, and the writer's
// parquet machinery has no business in the commit path.
func TestCommitDoesNotImportWriter(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	for _, d := range deps {
		if d == "github.com/compactord/compactord/writer" {
			t.Fatalf("commit depends on %s", d)
		}
	}
}
