package delta

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/compactord/compactord/delta/internal/deltatest"
)

// benchTableDir returns a table written by writeBenchTable: in a temp dir,
// or under $COMPACTORD_BENCH_TABLES (kept between runs, so that runs of
// two builds compare loads of one table without regenerating it).
func benchTableDir(b *testing.B, nFiles int) string {
	root := os.Getenv("COMPACTORD_BENCH_TABLES")
	if root == "" {
		dir := b.TempDir()
		deltatest.WriteBenchTable(b, dir, nFiles)
		return dir
	}
	dir := filepath.Join(root, fmt.Sprintf("loadsnapshot-%d", nFiles))
	if _, err := os.Stat(filepath.Join(dir, "_delta_log", "_last_checkpoint")); err == nil {
		return dir
	}
	if err := os.RemoveAll(dir); err != nil {
		b.Fatal(err)
	}
	deltatest.WriteBenchTable(b, dir, nFiles)
	return dir
}

// BenchmarkLoadSnapshot loads a checkpointed table of 100k and of 1M
// files (plus 100 JSON commits), reporting the peak heap while loading and
// the process CPU time per load.
func BenchmarkLoadSnapshot(b *testing.B) {
	for _, size := range []struct {
		name   string
		nFiles int
	}{{"checkpoint100k+100commits", 100_000}, {"checkpoint1M+100commits", 1_000_000}} {
		b.Run(size.name, func(b *testing.B) {
			nFiles := size.nFiles
			dir := benchTableDir(b, nFiles)
			tbl := openDir(b, dir)
			b.ReportAllocs()
			b.ResetTimer()
			var maxPeak uint64
			var cpu time.Duration
			for i := 0; i < b.N; i++ {
				runtime.GC()
				before := deltatest.CPUTime()
				var snap *Snapshot
				var err error
				peak := deltatest.PeakHeap(func() { snap, err = LoadSnapshot(context.Background(), tbl, -1) })
				cpu += deltatest.CPUTime() - before
				if err != nil {
					b.Fatal(err)
				}
				if want := nFiles - 500 + 1000; len(snap.Files) != want || snap.Version != 200 {
					b.Fatalf("loaded %d files at version %d, want %d at 200", len(snap.Files), snap.Version, want)
				}
				maxPeak = max(maxPeak, peak)
			}
			b.ReportMetric(float64(maxPeak)/(1<<20), "peak-heap-MB")
			// CPU time used by the process per load: on a shared machine the
			// wall time also measures the neighbours.
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
		})
	}
}

// The generated benchmark table loads correctly (run as a test with a
// small size so that the generator and the reader agree).
func TestBenchTableLoads(t *testing.T) {
	dir, snap := loadBenchTable(t, 2000)
	if len(snap.Files) != 2000-500+1000 || snap.Version != 200 {
		t.Fatalf("%d files at version %d", len(snap.Files), snap.Version)
	}
	dvs := 0
	// Files of one partition read from one checkpoint chunk share their
	// partitionValues and tags maps (a small map costs hundreds of bytes).
	pvMaps, tagMaps := map[uintptr]string{}, map[uintptr]bool{}
	for _, f := range snap.Files {
		day := *f.PartitionValues["day"]
		if len(f.PartitionValues) != 1 {
			t.Fatalf("%s: partition values %v", f.Path, f.PartitionValues)
		}
		if d, ok := pvMaps[reflect.ValueOf(f.PartitionValues).Pointer()]; ok && d != day {
			t.Fatalf("%s: shares its partition values with a file of day %s", f.Path, d)
		}
		pvMaps[reflect.ValueOf(f.PartitionValues).Pointer()] = day
		if f.Tags != nil {
			tagMaps[reflect.ValueOf(f.Tags).Pointer()] = true
		}
	}
	// 28 days of checkpoint files and one of JSON adds (1000 maps).
	if len(pvMaps) > 29+1000 || len(tagMaps) > 1 {
		t.Fatalf("%d partitionValues maps and %d tags maps for %d files", len(pvMaps), len(tagMaps), len(snap.Files))
	}
	for _, f := range snap.Files {
		if _, ok, err := f.NumRecords(); err != nil || !ok || f.PartitionValues["day"] == nil {
			t.Fatalf("%s: stats or partition values missing", f.Path)
		}
		// Stats stay a string: parsed maps cost several times as much.
		if f.ParsedStats != nil {
			t.Fatalf("%s: snapshot holds parsed stats", f.Path)
		}
		if st, err := f.FullStats(); err != nil || st == nil || st.MinValues["id"] == nil {
			t.Fatalf("%s: FullStats = %+v, %v", f.Path, st, err)
		}
		if f.DeletionVector != nil {
			dvs++
		}
	}
	// Reading the checkpoint in many small concurrent chunks gives the
	// same actions as one pass.
	data, err := os.ReadFile(filepath.Join(dir, "_delta_log", "00000000000000000100.checkpoint.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	whole, err := parseCheckpointChunks(data, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	chunked, err := parseCheckpointChunks(data, 97)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.files)+len(whole.others) != 2000+1002 || !reflect.DeepEqual(whole, chunked) {
		t.Fatalf("chunked read differs: %d vs %d file actions", len(whole.files), len(chunked.files))
	}
	if dvs == 0 || snap.Metadata.PartitionColumns[0] != "day" || snap.Protocol.ReaderFeatures[0] != "deletionVectors" {
		t.Fatalf("checkpoint content lost: %d DVs, metadata %+v, protocol %+v", dvs, snap.Metadata, snap.Protocol)
	}
}

// loadBenchTable writes a bench table of nFiles checkpoint files in a
// temp dir and loads it.
func loadBenchTable(t *testing.T, nFiles int) (string, *Snapshot) {
	t.Helper()
	dir := t.TempDir()
	deltatest.WriteBenchTable(t, dir, nFiles)
	snap, err := LoadSnapshot(context.Background(), openDir(t, dir), -1)
	if err != nil {
		t.Fatal(err)
	}
	return dir, snap
}

// A checkpoint's file costs a share of a block of Adds and of text, and
// a DV when it has one, not one allocation per null optional field: the
// allocations of two loads that differ only in their checkpoint's file
// count, per extra file.
func TestCheckpointFileAllocations(t *testing.T) {
	allocs := func(nFiles int) uint64 {
		dir := t.TempDir()
		deltatest.WriteBenchTable(t, dir, nFiles)
		tbl := openDir(t, dir)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := LoadSnapshot(context.Background(), tbl, -1); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.Mallocs - before.Mallocs
	}
	small, large := allocs(2000), allocs(12000)
	// A DV and its two strings for one file in ten, the blocks, and a
	// little slack for the runtime's own allocations.
	if per := float64(large-small) / 10000; per > 0.5 {
		t.Fatalf("%.2f allocations per checkpoint file (%d for 2000 files, %d for 12000)", per, small, large)
	} else {
		t.Logf("%.2f allocations per checkpoint file", per)
	}
}
