package archtest

import (
	"slices"
	"testing"
)

// Checkpoint writing is an operation's tool, not a format service: only
// the checkpoint and log cleanup operations and the binary use it (tests
// are not counted), so nothing else can write a checkpoint behind their
// gates, and root delta, which it reads through, cannot import it.
func TestOnlyTheCheckpointOperationsAndTheBinaryImportCheckpointWriting(t *testing.T) {
	root, module := moduleRoot(t)
	allowed := []string{"checkpoint", "logcleanup", "cmd/compactord"}
	for name, p := range listPackages(t, root, module) {
		if slices.Contains(p.imports, "delta/checkpointwrite") && !slices.Contains(allowed, name) {
			t.Errorf("%s imports delta/checkpointwrite; only %v may", name, allowed)
		}
	}
}
