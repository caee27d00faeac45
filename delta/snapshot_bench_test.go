package delta

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/parquet-go/parquet-go"
)

// Checkpoint row shapes for generating a Spark-like classic checkpoint.
type (
	benchDV struct {
		StorageType    string `parquet:"storageType"`
		PathOrInlineDv string `parquet:"pathOrInlineDv"`
		Offset         *int32 `parquet:"offset,optional"`
		SizeInBytes    int32  `parquet:"sizeInBytes"`
		Cardinality    int64  `parquet:"cardinality"`
	}
	benchAdd struct {
		Path             string            `parquet:"path"`
		PartitionValues  map[string]string `parquet:"partitionValues"`
		Size             int64             `parquet:"size"`
		ModificationTime int64             `parquet:"modificationTime"`
		DataChange       bool              `parquet:"dataChange"`
		Stats            *string           `parquet:"stats,optional"`
		Tags             map[string]string `parquet:"tags,optional"`
		DeletionVector   *benchDV          `parquet:"deletionVector,optional"`
	}
	benchRemove struct {
		Path              string `parquet:"path"`
		DeletionTimestamp int64  `parquet:"deletionTimestamp"`
		DataChange        bool   `parquet:"dataChange"`
	}
	benchFormat struct {
		Provider string            `parquet:"provider"`
		Options  map[string]string `parquet:"options"`
	}
	benchMeta struct {
		ID               string            `parquet:"id"`
		Format           benchFormat       `parquet:"format"`
		SchemaString     string            `parquet:"schemaString"`
		PartitionColumns []string          `parquet:"partitionColumns,list"`
		Configuration    map[string]string `parquet:"configuration"`
		CreatedTime      *int64            `parquet:"createdTime,optional"`
	}
	benchProtocol struct {
		MinReaderVersion int32    `parquet:"minReaderVersion"`
		MinWriterVersion int32    `parquet:"minWriterVersion"`
		ReaderFeatures   []string `parquet:"readerFeatures,list"`
		WriterFeatures   []string `parquet:"writerFeatures,list"`
	}
	benchRow struct {
		Add      *benchAdd      `parquet:"add,optional"`
		Remove   *benchRemove   `parquet:"remove,optional"`
		MetaData *benchMeta     `parquet:"metaData,optional"`
		Protocol *benchProtocol `parquet:"protocol,optional"`
	}
)

const benchSchema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"name","type":"string","nullable":true,"metadata":{}},{"name":"ts","type":"timestamp","nullable":true,"metadata":{}},{"name":"amount","type":"double","nullable":true,"metadata":{}},{"name":"day","type":"date","nullable":true,"metadata":{}}]}`

func benchStats(i int) string {
	return fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":%d,"name":"name-%06d","ts":"2024-01-01T00:00:00.000Z","amount":%d.5},"maxValues":{"id":%d,"name":"name-%06d-zz","ts":"2024-01-31T23:59:59.999Z","amount":%d.25},"nullCount":{"id":0,"name":%d,"ts":0,"amount":0},"tightBounds":true}`,
		1000+i%997, i*1000, i, i, i*1000+999, i, i+10, i%3)
}

func benchPath(i int) string {
	return fmt.Sprintf("day=2024-01-%02d/part-%05d-6f1c0e2a-%04x-4b7d-9e1f-%012x-c000.snappy.parquet", 1+i%28, i%1000, i%65536, i)
}

// writeBenchTable writes a table whose log is a classic checkpoint at
// version 100 with nFiles adds (10% with DVs, JSON stats on every add)
// plus 100 JSON commits (101..200), each adding 10 files and removing 5.
func writeBenchTable(tb testing.TB, dir string, nFiles int) {
	tb.Helper()
	writeBenchTableStats(tb, dir, nFiles, benchStats)
}

// writeBenchTableStats is writeBenchTable with stats(i) as the stats of
// the checkpoint's i-th add.
func writeBenchTableStats(tb testing.TB, dir string, nFiles int, stats func(i int) string) {
	tb.Helper()
	logDir := filepath.Join(dir, "_delta_log")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		tb.Fatal(err)
	}
	f, err := os.Create(filepath.Join(logDir, "00000000000000000100.checkpoint.parquet"))
	if err != nil {
		tb.Fatal(err)
	}
	w := parquet.NewGenericWriter[benchRow](f, parquet.Compression(&parquet.Snappy))
	created := int64(1700000000000)
	rows := []benchRow{
		{Protocol: &benchProtocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors"}}},
		{MetaData: &benchMeta{ID: "bench", Format: benchFormat{Provider: "parquet", Options: map[string]string{}}, SchemaString: benchSchema,
			PartitionColumns: []string{"day"}, Configuration: map[string]string{"delta.enableDeletionVectors": "true"}, CreatedTime: &created}},
	}
	for i := 0; i < nFiles; i++ {
		st := stats(i)
		a := &benchAdd{Path: benchPath(i), PartitionValues: map[string]string{"day": fmt.Sprintf("2024-01-%02d", 1+i%28)},
			Size: int64(1 << 20), ModificationTime: created + int64(i), DataChange: false, Stats: &st,
			Tags: map[string]string{"INSERTION_TIME": "1700000000000000"}}
		if i%10 == 0 {
			off := int32(1 + 42*(i%100))
			a.DeletionVector = &benchDV{StorageType: "u", PathOrInlineDv: fmt.Sprintf("ab^-aqEH.-t@S}K{vb[*k%04d", i%10000)[:20], Offset: &off, SizeInBytes: 34, Cardinality: int64(1 + i%7)}
		}
		rows = append(rows, benchRow{Add: a})
		if len(rows) == 4096 {
			if _, err := w.Write(rows); err != nil {
				tb.Fatal(err)
			}
			rows = rows[:0]
		}
	}
	for i := 0; i < 1000; i++ {
		rows = append(rows, benchRow{Remove: &benchRemove{Path: fmt.Sprintf("old/part-%d.parquet", i), DeletionTimestamp: created, DataChange: true}})
	}
	if _, err := w.Write(rows); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	next := nFiles
	for v := int64(101); v <= 200; v++ {
		var lines []actions.Action
		lines = append(lines, actions.Action{CommitInfo: actions.CommitInfo{"timestamp": json.RawMessage(fmt.Sprint(created + v)), "operation": json.RawMessage(`"WRITE"`)}})
		for k := 0; k < 5; k++ {
			// Distinct checkpoint files without DVs (odd indexes).
			victim := int((v-101)*5) + k
			idx := (victim%(nFiles/10))*10 + 1 + 2*(victim/(nFiles/10))
			ts := created + v
			lines = append(lines, actions.Action{Remove: &actions.Remove{Path: benchPath(idx), DeletionTimestamp: &ts, DataChange: true}})
		}
		for k := 0; k < 10; k++ {
			lines = append(lines, actions.Action{Add: &actions.Add{Path: benchPath(next), PartitionValues: map[string]*string{"day": ptrTo("2024-02-01")},
				Size: 1 << 20, ModificationTime: created + v, DataChange: true, Stats: benchStats(next)}})
			next++
		}
		var body []byte
		for _, a := range lines {
			b, err := actions.MarshalAction(a)
			if err != nil {
				tb.Fatal(err)
			}
			body = append(append(body, b...), '\n')
		}
		if err := os.WriteFile(filepath.Join(logDir, fmt.Sprintf("%020d.json", v)), body, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(logDir, "_last_checkpoint"), []byte(fmt.Sprintf(`{"version":100,"size":%d}`, nFiles+1002)), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakHeap samples the heap while fn runs and returns the highest
// HeapInuse seen.
func peakHeap(fn func()) uint64 {
	stop := testutil.PeakOf(5*time.Millisecond, testutil.HeapInuse)
	fn()
	return stop()
}

// benchTableDir returns a table written by writeBenchTable: in a temp dir,
// or under $COMPACTORD_BENCH_TABLES (kept between runs, so that runs of
// two builds compare loads of one table without regenerating it).
func benchTableDir(b *testing.B, nFiles int) string {
	root := os.Getenv("COMPACTORD_BENCH_TABLES")
	if root == "" {
		dir := b.TempDir()
		writeBenchTable(b, dir, nFiles)
		return dir
	}
	dir := filepath.Join(root, fmt.Sprintf("loadsnapshot-%d", nFiles))
	if _, err := os.Stat(filepath.Join(dir, "_delta_log", "_last_checkpoint")); err == nil {
		return dir
	}
	if err := os.RemoveAll(dir); err != nil {
		b.Fatal(err)
	}
	writeBenchTable(b, dir, nFiles)
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
				before := cpuTime()
				var snap *Snapshot
				var err error
				peak := peakHeap(func() { snap, err = LoadSnapshot(context.Background(), tbl, -1) })
				cpu += cpuTime() - before
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
	writeBenchTable(t, dir, nFiles)
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
		writeBenchTable(t, dir, nFiles)
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
