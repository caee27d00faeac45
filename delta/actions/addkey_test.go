package actions

import (
	"slices"
	"testing"

	"github.com/compactord/compactord/failure"
)

// TestAddKeyIsCanonicalAndRefusesPathsOutsideTheRoot: a data file's key is
// its path decoded once and cleaned; a path outside the root is a corrupt
// data file (quarantined, so a run goes on with the other files).
func TestAddKeyIsCanonicalAndRefusesPathsOutsideTheRoot(t *testing.T) {
	for path, want := range map[string]string{
		"part-0.parquet": "part-0.parquet", "./part-0.parquet": "part-0.parquet", "p%3D1/a/../part-0.parquet": "p=1/part-0.parquet",
		"p=1//part-0.parquet": "p=1/part-0.parquet",
	} {
		if got, err := (&Add{Path: path}).Key(); err != nil || got != want {
			t.Errorf("Key(%q) = %q, %v; want %q", path, got, err, want)
		}
	}
	for _, path := range []string{"../x.parquet", "%2e%2e%2fx.parquet", "a/../../x.parquet", "/etc/x.parquet", "s3://other/x.parquet", "file:///etc/x"} {
		_, err := (&Add{Path: path}).Key()
		if failure.Of(err) != failure.Quarantine || !slices.Contains(failure.CorruptDataFiles(err), path) {
			t.Errorf("Key(%q) = %v (class %v), want a corrupt data file naming it", path, err, failure.Of(err))
		}
	}
}
