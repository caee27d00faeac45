package writer

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

// corruptColumnChunk overwrites one column chunk of a data file (header and
// pages) with 0xFF bytes, leaving the footer intact, and returns the chunk's
// byte range.
func corruptColumnChunk(t *testing.T, path string, rowGroup, column int) (int64, int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(strings.NewReader(string(b)), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	md := f.Metadata().RowGroups[rowGroup].Columns[column].MetaData
	start := md.DataPageOffset
	if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
		start = md.DictionaryPageOffset
	}
	end := start + md.TotalCompressedSize
	for i := start; i < end; i++ {
		b[i] = 0xFF
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return start, end
}

// holdGroupBefore is an encodeHook that holds the first column taken up
// of the pack row group ending with source prev (and not holding bad)
// until a column of another row group has failed: the held column is then
// skipped, and its row group committed short of it.
func holdGroupBefore(t *testing.T, prev, bad *actions.Add, held *atomic.Bool) encodeHook {
	return func(e *colEncoder, g *groupWrite, c int) {
		if g.units[len(g.units)-1].p.src != prev || slices.ContainsFunc(g.units, func(u packUnit) bool { return u.p.src == bad }) {
			return
		}
		if !held.CompareAndSwap(false, true) {
			return
		}
		for deadline := time.Now().Add(time.Minute); e.first.Load() == nil; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("column %d held a minute and no other column failed", c)
				return
			}
		}
	}
}

// A source whose footer is fine but whose pages are not fails the job with
// an error naming it and classed as a corrupt data file (quarantine),
// whichever path reads it, and leaves no object behind.
func TestACorruptPageFailsTheJobNamingTheSource(t *testing.T) {
	for _, tc := range []struct {
		name   string
		column int
		opts   func(*Options)
		// hold: a column of the row group just before the corrupt
		// source's is taken up only once the corrupt column failed.
		hold bool
	}{
		{"pack path, a statistics column", 0, func(*Options) {}, false},
		{"pack path, a column without statistics", -1, func(*Options) {}, false},
		// About one source per row group: the corrupt one is in flight
		// with the next, which must not be committed after it.
		{"pack path, row groups in flight", -1, func(o *Options) { o.RowGroupBytes = 1 << 20 }, false},
		// The earlier row group, short of the column skipped, fails with
		// the corrupt source's error, not with its own missing rows.
		{"pack path, an earlier row group skips a column", -1, func(o *Options) { o.RowGroupBytes = 1 << 20 }, true},
		{"row path", 0, func(o *Options) { o.DisableCopyPath = true }, false},
		{"delta scan", 0, func(o *Options) { o.forceScan = true }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// 12 small snappy files of 10 columns, statistics on the first
			// only, so that a corrupt last column is first met by
			// parquet-go's re-encoding of the pack, not by the statistics.
			dir, tbl, snap := generatedTable(t, 3<<20, 200<<10, 300<<10, 7, nil)
			snap.Metadata.Configuration = map[string]string{"delta.dataSkippingNumIndexedCols": "1"}
			bad := snap.Files[5]
			key, err := bad.Key()
			if err != nil {
				t.Fatal(err)
			}
			col := tc.column
			if col < 0 {
				pf := testutil.OpenParquet(t, filepath.Join(dir, filepath.FromSlash(key)))
				col = len(pf.Schema().Columns()) - 1
			}
			corruptColumnChunk(t, filepath.Join(dir, filepath.FromSlash(key)), 0, col)
			before := tabletest.Keys(t, tbl)
			opts := DefaultOptions()
			opts.SpillDir = t.TempDir()
			tc.opts(&opts)
			var held atomic.Bool
			if tc.hold {
				opts.encodeHook = holdGroupBefore(t, snap.Files[4], bad, &held)
			}
			job := &Job{ID: "j", Sources: snap.Files}
			objs := &attempt.Objects{}
			_, err = Rewrite(context.Background(), tbl, snap, job, objs, opts)
			if cerr := cleanAttempt(context.Background(), objs, tbl); cerr != nil {
				t.Fatal(cerr)
			}
			if err == nil {
				t.Fatal("a corrupt source was rewritten without error")
			}
			if tc.hold && !held.Load() {
				t.Fatal("no column of the row group before the corrupt source's was held")
			}
			if got := failure.CorruptDataFiles(err); !slices.Equal(got, []string{bad.Path}) || failure.Of(err) != failure.Quarantine {
				t.Errorf("error names corrupt data files %v (class %v), want [%s] (quarantine): %v", got, failure.Of(err), bad.Path, err)
			}
			if !strings.Contains(err.Error(), bad.Path) {
				t.Errorf("error does not name %s: %v", bad.Path, err)
			}
			for _, f := range snap.Files {
				if f != bad && strings.Contains(err.Error(), f.Path) {
					t.Errorf("error names %s, a sound source: %v", f.Path, err)
				}
			}
			// Every object the failed job wrote was tracked: cleaning the
			// attempt restores the table.
			if after := tabletest.Keys(t, tbl); !slices.Equal(before, after) {
				t.Errorf("objects left after cleaning the failed attempt:\nbefore %v\nafter  %v", before, after)
			}
			t.Logf("%v", err)
		})
	}
}
