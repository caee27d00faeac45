package vacuum

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/internal/testutil"
)

// TestFullVacuumOfManyObjectsRunsInBoundedMemory creates
// COMPACTORD_VACUUM_OBJECTS orphan files (e.g. 1000000) in 1000 directories
// of a local table and runs a full vacuum over them, sampling the heap: the
// listing streams directory pages and the candidate list is spilled, so the
// peak heap does not grow with the number of objects (compare two runs).
// Skipped unless the variable is set: creating a million files takes
// minutes.
func TestFullVacuumOfManyObjectsRunsInBoundedMemory(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("COMPACTORD_VACUUM_OBJECTS"))
	if n <= 0 {
		t.Skip("set COMPACTORD_VACUUM_OBJECTS (e.g. 1000000) to run")
	}
	f := newFixture(t, nil, "")
	live := f.writeFile(ids(0, 10))
	f.commit(actions.Action{Add: live})
	const dirs = 1000
	old := f.now
	for d := range dirs {
		dir := filepath.Join(f.dir, fmt.Sprintf("p=%d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := d; i < n; i += dirs {
			p := filepath.Join(dir, fmt.Sprintf("part-%07d-orphan.snappy.parquet", i))
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.now = f.now.Add(30 * 24 * time.Hour)
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	stop := testutil.PeakOf(20*time.Millisecond, testutil.HeapInuse)
	start := time.Now()
	res, err := Run(context.Background(), f.tbl, Options{Mode: Full, Now: f.clock, Commit: f.commitOpts(), SpillDir: t.TempDir(), Snapshots: f.load})
	peak := stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("full vacuum of %d objects in %d directories: %s, deleted %d files and %d directories; heap in use %d MiB before, peak %d MiB during",
		n, dirs, time.Since(start).Round(time.Second), res.FilesDeleted, res.DirsDeleted, base.HeapInuse>>20, peak>>20)
	if res.FilesDeleted != int64(n) || !f.exists(live.Path) {
		t.Fatalf("deleted %d of %d orphans; live file kept: %v", res.FilesDeleted, n, f.exists(live.Path))
	}
}
