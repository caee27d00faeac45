package runner

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/checkpointwrite"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/logtest"
	"github.com/compactord/compactord/policies"
)

// pollBenchSchema has ten columns, like the tables the daemon watches.
func pollBenchSchema() string {
	var fields []string
	for _, c := range strings.Fields("id:long user_id:long name:string email:string ts:timestamp amount:double qty:integer country:string flag:boolean day:date") {
		name, typ, _ := strings.Cut(c, ":")
		fields = append(fields, fmt.Sprintf(`{"name":%q,"type":%q,"nullable":true,"metadata":{}}`, name, typ))
	}
	return `{"type":"struct","fields":[` + strings.Join(fields, ",") + `]}`
}

// pollBenchAdd is file i of a table: one of 30 day partitions, stats on
// the nine non-partition columns, every tenth file with a deletion vector.
func pollBenchAdd(i int, commit int64) *actions.Add {
	day := fmt.Sprintf("2024-01-%02d", 1+i%30)
	rows := int64(5000 + i%4000)
	a := &actions.Add{
		Path:             fmt.Sprintf("day=%s/part-%05d-6f1c0e2a-%04x-4b7d-9e1f-%012x-c000.zstd.parquet", day, i%1000, i%65536, i),
		PartitionValues:  map[string]*string{"day": &day},
		Size:             int64(1<<20 + i%(64<<20)),
		ModificationTime: 1_700_000_000_000 + commit*1000,
		DataChange:       true,
		Stats: fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":%d,"user_id":%d,"name":"alice-%06d","email":"a%06d@example.com","ts":"2024-01-01T00:00:00.000Z","amount":%d.5,"qty":1,"country":"AR"},`+
			`"maxValues":{"id":%d,"user_id":%d,"name":"zoe-%06d","email":"z%06d@example.org","ts":"2024-01-31T23:59:59.999Z","amount":%d.25,"qty":999,"country":"ZW"},`+
			`"nullCount":{"id":0,"user_id":0,"name":%d,"email":0,"ts":0,"amount":0,"qty":0,"country":0,"flag":%d},"tightBounds":%t}`,
			rows, i*10000, i%77777, i, i, i%1000, i*10000+9999, i%77777+5000, i, i, i%1000+100, i%50, i%7, i%10 != 0),
		Tags: map[string]string{"INSERTION_TIME": fmt.Sprint(1_700_000_000_000_000 + commit*1_000_000)},
	}
	if i%10 == 0 {
		off := int32(1 + i%1000)
		a.DeletionVector = &actions.DeletionVector{StorageType: "u", PathOrInlineDv: fmt.Sprintf("ab^-aqEH.-t@S}K{vb[%02d", i%100)[:20],
			Offset: &off, SizeInBytes: 40, Cardinality: int64(1 + i%50)}
	}
	return a
}

// writePollBenchTable writes a table of nFiles files: version 0 with the
// protocol (deletion vectors) and metadata, commits of 10k adds each, a
// checkpoint at the last of them, then two small commits (one that adds
// files and one that removes some), as a busy table's log looks.
func writePollBenchTable(b *testing.B, dir string, nFiles int) *delta.Table {
	b.Helper()
	ctx := context.Background()
	tbl, err := delta.OpenTable(ctx, "file://"+dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tbl.Close() })
	created := int64(1_700_000_000_000)
	p := actions.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors"}}
	m := actions.Metadata{ID: "pollbench", Format: actions.Format{Provider: "parquet", Options: map[string]string{}},
		SchemaString: pollBenchSchema(), PartitionColumns: []string{"day"}, CreatedTime: &created,
		Configuration: map[string]string{"delta.enableDeletionVectors": "true"}}
	logtest.Commit(b, tbl, 0, actions.Action{Protocol: &p}, actions.Action{Metadata: &m})
	v := int64(1)
	for lo := 0; lo < nFiles; lo += 10_000 {
		var acts []actions.Action
		for i := lo; i < min(lo+10_000, nFiles); i++ {
			acts = append(acts, actions.Action{Add: pollBenchAdd(i, v)})
		}
		logtest.Commit(b, tbl, v, acts...)
		v++
	}
	snap, err := delta.LoadSnapshot(ctx, tbl, -1)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := checkpointwrite.WriteCheckpoint(ctx, tbl, snap, checkpointwrite.CheckpointOptions{}); err != nil {
		b.Fatal(err)
	}
	var acts []actions.Action
	for i := nFiles; i < nFiles+100; i++ {
		acts = append(acts, actions.Action{Add: pollBenchAdd(i, v)})
	}
	logtest.Commit(b, tbl, v, acts...)
	v++
	acts = acts[:0]
	for i := 1; i < 100; i += 2 {
		acts = append(acts, actions.Action{Remove: logtest.RemoveFile(pollBenchAdd(i, 1), created+v*1000)})
	}
	logtest.Commit(b, tbl, v, acts...)
	return tbl
}

// BenchmarkDaemonPollMemory polls 10 tables of 100k files each through the
// daemon's poll (Backend.Poll: a full load, then one new commit per table
// replayed incrementally) and reports the heap the poll state keeps per
// tracked file once the polls are done (after a GC, over the heap before
// the first poll), and the peak heap while polling.
func BenchmarkDaemonPollMemory(b *testing.B) {
	const nTables, nFiles = 10, 100_000
	ctx := context.Background()
	dirs := make([]string, nTables)
	tables := make([]*delta.Table, nTables)
	for i := range dirs {
		dirs[i] = b.TempDir()
		tables[i] = writePollBenchTable(b, dirs[i], nFiles)
	}
	now := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	var perFile float64
	var peak uint64
	for n := 0; n < b.N; n++ {
		pols := make([]policies.Policy, nTables)
		for i := range pols {
			pols[i] = policies.DefaultPolicy()
			pols[i].Name = fmt.Sprintf("t%d", i)
			pols[i].URL = "file://" + dirs[i]
		}
		next := make([]int64, nTables)
		b.StopTimer()
		base := settledHeap()
		b.StartTimer()
		be := &Backend{Tables: NewTables(), Now: func() time.Time { return now }}
		stopPeak := testutil.PeakOf(5*time.Millisecond, testutil.HeapInuse)
		tracked := 0
		for i, p := range pols {
			res, err := be.Poll(ctx, p, -1)
			if err != nil {
				b.Fatal(err)
			}
			next[i] = res.Version
		}
		// One more commit per table, then the incremental poll.
		b.StopTimer()
		for i := range pols {
			next[i]++
			logtest.Commit(b, tables[i], next[i], actions.Action{Add: pollBenchAdd(nFiles+1000+n, next[i])})
		}
		b.StartTimer()
		for i, p := range pols {
			res, err := be.Poll(ctx, p, next[i]-1)
			if err != nil {
				b.Fatal(err)
			}
			if !res.Changed || res.Version != next[i] || res.Backlog == nil {
				b.Fatalf("poll of %s: %+v, want version %d changed with a backlog", p.Name, res, next[i])
			}
			tracked += res.Backlog.Files
		}
		b.StopTimer()
		peak = max(peak, stopPeak())
		if be.FullLoads() != nTables {
			b.Fatalf("%d full loads, want %d (the second polls replay one commit)", be.FullLoads(), nTables)
		}
		if want := nTables * (nFiles + 100 - 50 + 1 + n); tracked != want {
			b.Fatalf("tracking %d files, want %d", tracked, want)
		}
		held := settledHeap()
		perFile = (float64(held) - float64(base)) / float64(tracked)
		runtime.KeepAlive(be)
		if err := be.Tables.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(perFile, "heap-B/file")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}

// settledHeap is the live heap after two collections.
func settledHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
