package checkpointwrite

import (
	"context"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/internal/deltatest"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/testutil/logtest"
)

func logName(v int64) string { return strings.TrimPrefix(logpath.CommitKey(v), logpath.LogDir) }

// benchTableDir returns a table written by writeBenchTable: in a temp dir,
// or under $COMPACTORD_BENCH_TABLES (kept between runs, so that runs of

func ptrTo[T any](v T) *T { return &v }

// loadBenchTable writes a bench table of nFiles checkpoint files in a
// temp dir and loads it.
func loadBenchTable(t *testing.T, nFiles int) (string, *delta.Snapshot) {
	t.Helper()
	dir := t.TempDir()
	deltatest.WriteBenchTable(t, dir, nFiles)
	snap, err := delta.LoadSnapshot(context.Background(), logtest.Open(t, dir), -1)
	if err != nil {
		t.Fatal(err)
	}
	return dir, snap
}
