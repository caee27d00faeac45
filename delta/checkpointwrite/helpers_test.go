package checkpointwrite

import (
	"encoding/json"

	"context"
	"fmt"
	"github.com/parquet-go/parquet-go"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/testutil"
)

// openDir opens a table directory through OpenTable (file:// URL).
func openDir(t testing.TB, dir string) *delta.Table {
	t.Helper()
	tbl, err := delta.OpenTable(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.Close() })
	return tbl
}

// copyTableDir copies a test table into a fresh temp dir (writable, so it
// can be damaged) and returns the copy's root. skip decides which files
// (relative slash paths) to leave out.
func copyTableDir(t testing.TB, src string, skip func(rel string) bool) string {
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

func logName(v int64) string { return strings.TrimPrefix(logpath.CommitKey(v), logpath.LogDir) }

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

func ptrTo[T any](v T) *T { return &v }

// loadBenchTable writes a bench table of nFiles checkpoint files in a
// temp dir and loads it.
func loadBenchTable(t *testing.T, nFiles int) (string, *delta.Snapshot) {
	t.Helper()
	dir := t.TempDir()
	writeBenchTable(t, dir, nFiles)
	snap, err := delta.LoadSnapshot(context.Background(), openDir(t, dir), -1)
	if err != nil {
		t.Fatal(err)
	}
	return dir, snap
}
