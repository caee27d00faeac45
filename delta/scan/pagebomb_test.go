package scan

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta/internal/deltatest"

	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/pq"
	"github.com/compactord/compactord/delta/statscollect"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/pagebomb"
)

// scanAll reads every live row of the file at path of the table at root.
func scanAll(t *testing.T, root, path string, lim pq.PageLimits) (rows int64, err error) {
	t.Helper()
	ctx := context.Background()
	tbl := openScanTable(t, root)
	snap, err := delta.LoadSnapshot(ctx, tbl, -1)
	if err != nil {
		t.Fatal(err)
	}
	var add *actions.Add
	for _, a := range snap.Files {
		if a.Path == path {
			add = a
		}
	}
	if add == nil {
		t.Fatalf("no add of %s", path)
	}
	s, err := OpenFileScan(ctx, tbl, snap, add, ScanOptions{Pages: lim, ReuseRows: true})
	if err != nil {
		return 0, err
	}
	defer s.Close()
	buf := make([]parquet.Row, 1024)
	for {
		n, err := s.ReadRows(buf, nil)
		rows += int64(n)
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return rows, err
		}
	}
}

func TestPageBombsAreCorruptFilesNamedWithTheirColumnAndPage(t *testing.T) {
	tests := []struct {
		name string
		bomb pagebomb.File
		lim  pq.PageLimits
		want []string
		// decodes is set when the file is refused only after RatioFloor
		// bytes of its pages were decoded (and their allocations are not
		// bounded by the test).
		decodes bool
	}{
		{
			// 512 MiB in one page of a 4 KiB file, against a 64 MiB budget;
			// the footer hides it.
			name: "one page claiming more than the page limit",
			bomb: pagebomb.File{Name: "big-page.parquet", Pages: 1, PageBytes: 512 << 20, HideTotals: true},
			lim:  pq.PageLimits{MaxPageBytes: 64 << 20},
			want: []string{"row group 0, column x, page 0:", "512 MiB", "64 MiB", "MaxPageBytes"},
		},
		{
			// The same page, its footer honest: refused before any page is
			// read.
			name: "a footer claiming an absurd ratio",
			bomb: pagebomb.File{Name: "big-page.parquet", Pages: 1, PageBytes: 512 << 20},
			lim:  pq.PageLimits{MaxPageBytes: 64 << 20},
			want: []string{"row group 0, column x: ", "the footer claims 512.0 MiB", "MaxRatio"},
		},
		{
			// 384 MiB in 1 MiB pages of an 18 KiB file: each page is under
			// the limit, the chunk is 20,000 times its size; the footer
			// hides it.
			name: "many pages of an absurd compression ratio",
			bomb: pagebomb.File{Name: "many-pages.parquet", Pages: 384, PageBytes: 1 << 20, HideTotals: true},
			want: []string{"row group 0, column x, page 256:", "the chunk's page headers up to here claim", "MaxRatio"},
		},
		{
			// 8 row groups of 48 MiB each: every chunk is under the floor,
			// the file is not.
			name:    "many chunks of an absurd compression ratio",
			bomb:    pagebomb.File{Name: "many-chunks.parquet", RowGroups: 8, Pages: 48, PageBytes: 1 << 20, HideTotals: true},
			want:    []string{"row group 5, column x, page 16:", "the file's page headers read up to here claim", "MaxRatio"},
			decodes: true,
		},
		{
			name: "many chunks of an absurd compression ratio, by the footer",
			bomb: pagebomb.File{Name: "many-chunks.parquet", RowGroups: 8, Pages: 48, PageBytes: 1 << 20},
			want: []string{"the footer's column chunks up to here claim", "MaxRatio"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if err := pagebomb.WriteTable(root, tt.bomb); err != nil {
				t.Fatal(err)
			}
			var err error
			alloc := deltatest.AllocatedBy(func() { _, err = scanAll(t, root, tt.bomb.Name, tt.lim) })
			var cf *failure.CorruptFileError
			if !errors.As(err, &cf) || cf.DataFile != tt.bomb.Name || cf.Kind != failure.DataFile {
				t.Fatalf("scan = %v, want a *failure.CorruptFileError of data file %s", err, tt.bomb.Name)
			}
			if !errors.Is(err, pq.ErrPageLimit) {
				t.Errorf("error %v does not wrap ErrPageLimit", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if alloc > 32<<20 && !tt.decodes {
				t.Errorf("refusing the bomb allocated %d MiB, want under 32 MiB", alloc>>20)
			}
			// Its honest neighbour reads.
			if n, err := scanAll(t, root, "honest-"+tt.bomb.Name, tt.lim); err != nil || n != 1024 {
				t.Errorf("honest file: %d rows, %v; want 1024", n, err)
			}
		})
	}
}

// TestThePageLimitsRefuseNoFileOfTheSharedTables reads every data file of
// the shared test tables (Spark, delta-rs, Databricks and others) through
// the page guard with the default limits, and logs the highest column
// chunk ratios their footers state.
func TestThePageLimitsRefuseNoFileOfTheSharedTables(t *testing.T) {
	base := filepath.Dir(filepath.Dir(testutil.DeltaTable(t, "dv-small")))
	var files []string
	filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") && !strings.Contains(p, "_delta_log") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) < 100 {
		t.Fatalf("found %d parquet files under %s", len(files), base)
	}
	var maxRatio, maxRatioMiB float64
	var maxChunk int64
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		g := pq.NewPageGuard(bytes.NewReader(data), p, pq.PageLimits{})
		f, err := parquet.OpenFile(g, int64(len(data)))
		if err != nil {
			continue // not a parquet file parquet-go reads
		}
		if err := g.Watch(f); err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		for _, rg := range f.RowGroups() {
			for _, cc := range rg.ColumnChunks() {
				if err := statscollect.ReadPages(cc, func(parquet.Page) error { return nil }); errors.Is(err, pq.ErrPageLimit) {
					t.Errorf("%s: %v", p, err)
				}
			}
		}
		for _, rg := range f.Metadata().RowGroups {
			for _, cc := range rg.Columns {
				m := cc.MetaData
				r := float64(m.TotalUncompressedSize) / float64(max(m.TotalCompressedSize, 1))
				maxRatio = max(maxRatio, r)
				maxChunk = max(maxChunk, m.TotalUncompressedSize)
				if m.TotalUncompressedSize > 1<<20 {
					maxRatioMiB = max(maxRatioMiB, r)
				}
			}
		}
	}
	t.Logf("%d files: highest chunk ratio %.1f (%.1f among chunks over 1 MiB), largest chunk %d bytes", len(files), maxRatio, maxRatioMiB, maxChunk)
}
