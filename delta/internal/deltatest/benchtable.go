package deltatest

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/internal/testutil"
)

// Checkpoint row shapes for generating a Spark-like classic checkpoint
// (WriteBenchTable).
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

// BenchStats is the stats JSON of the bench table's i-th file.
func BenchStats(i int) string {
	return fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":%d,"name":"name-%06d","ts":"2024-01-01T00:00:00.000Z","amount":%d.5},"maxValues":{"id":%d,"name":"name-%06d-zz","ts":"2024-01-31T23:59:59.999Z","amount":%d.25},"nullCount":{"id":0,"name":%d,"ts":0,"amount":0},"tightBounds":true}`,
		1000+i%997, i*1000, i, i, i*1000+999, i, i+10, i%3)
}

// BenchPath is the bench table's i-th file path (Spark's part-file naming).
func BenchPath(i int) string {
	return fmt.Sprintf("day=2024-01-%02d/part-%05d-6f1c0e2a-%04x-4b7d-9e1f-%012x-c000.snappy.parquet", 1+i%28, i%1000, i%65536, i)
}

// WriteBenchTable writes a table whose log is a classic checkpoint at
// version 100 with nFiles adds (10% with DVs, JSON stats on every add)
// plus 100 JSON commits (101..200), each adding 10 files and removing 5.
func WriteBenchTable(tb testing.TB, dir string, nFiles int) {
	tb.Helper()
	WriteBenchTableStats(tb, dir, nFiles, BenchStats)
}

// WriteBenchTableStats is WriteBenchTable with stats(i) as the stats of
// the checkpoint's i-th add.
func WriteBenchTableStats(tb testing.TB, dir string, nFiles int, stats func(i int) string) {
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
		a := &benchAdd{Path: BenchPath(i), PartitionValues: map[string]string{"day": fmt.Sprintf("2024-01-%02d", 1+i%28)},
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
		var lines []any
		lines = append(lines, map[string]any{"commitInfo": map[string]any{"timestamp": created + v, "operation": "WRITE"}})
		for k := 0; k < 5; k++ {
			// Distinct checkpoint files without DVs (odd indexes).
			victim := int((v-101)*5) + k
			idx := (victim%(nFiles/10))*10 + 1 + 2*(victim/(nFiles/10))
			lines = append(lines, map[string]any{"remove": map[string]any{"path": BenchPath(idx), "deletionTimestamp": created + v, "dataChange": true}})
		}
		for k := 0; k < 10; k++ {
			lines = append(lines, map[string]any{"add": map[string]any{"path": BenchPath(next), "partitionValues": map[string]string{"day": "2024-02-01"},
				"size": 1 << 20, "modificationTime": created + v, "dataChange": true, "stats": BenchStats(next)}})
			next++
		}
		var body []byte
		for _, a := range lines {
			b, err := json.Marshal(a)
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

// CPUTime is the process's user+system CPU time so far.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// PeakHeap samples the heap while fn runs and returns the highest
// HeapInuse seen.
func PeakHeap(fn func()) uint64 {
	stop := testutil.PeakOf(5*time.Millisecond, testutil.HeapInuse)
	fn()
	return stop()
}

// CopyTableDir copies a test table into a fresh temp dir (writable, so it
// can be damaged) and returns the copy's root. skip decides which files
// (relative slash paths) to leave out.
func CopyTableDir(t testing.TB, src string, skip func(rel string) bool) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if skip != nil && skip(filepath.ToSlash(rel)) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
