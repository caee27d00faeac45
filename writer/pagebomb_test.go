package writer

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"

	"github.com/compactord/compactord/delta/pq"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/testutil/pagebomb"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

// A source holding a page that claims more than the row group budget is a
// corrupt data file, refused before its page is allocated, on every path.
func TestAPageBombSourceIsRefusedWithinTheBudget(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts func(*Options)
	}{
		{"pack path", func(*Options) {}},
		{"row path", func(o *Options) { o.DisableCopyPath = true }},
		{"delta scan", func(o *Options) { o.forceScan = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			// 512 MiB in one page, the footer hiding it; a 64 MiB budget.
			bomb := pagebomb.File{Name: "bomb.parquet", Pages: 1, PageBytes: 512 << 20, HideTotals: true}
			if err := pagebomb.WriteTable(dir, bomb); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			tbl := tabletest.Open(t, "file://"+dir)
			snap := tabletest.Latest(t, tbl)
			opts := DefaultOptions()
			opts.SpillDir = t.TempDir()
			opts.RowGroupBytes = 64 << 20
			tc.opts(&opts)
			job := &Job{ID: "j", Sources: snap.Files}
			objs := &attempt.Objects{}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := Rewrite(ctx, tbl, snap, job, objs, opts)
			runtime.ReadMemStats(&after)
			if cerr := cleanAttempt(ctx, objs, tbl); cerr != nil {
				t.Fatal(cerr)
			}
			if got := failure.CorruptDataFiles(err); !slices.Equal(got, []string{bomb.Name}) || failure.Of(err) != failure.Quarantine {
				t.Fatalf("error names corrupt data files %v (class %v), want [%s] (quarantine): %v", got, failure.Of(err), bomb.Name, err)
			}
			if !errors.Is(err, pq.ErrPageLimit) {
				t.Errorf("error does not wrap pq.ErrPageLimit: %v", err)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
				t.Errorf("the rewrite allocated %d MiB, over its 64 MiB budget", alloc>>20)
			}
		})
	}
}
