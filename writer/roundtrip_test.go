package writer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"

	deltascan "github.com/compactord/compactord/delta/scan"

	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/composition"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/stats"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

// readableTables lists the test tables with data that a writer may rewrite.
func readableTables(t *testing.T) map[string]testutil.Expected {
	t.Helper()
	out := map[string]testutil.Expected{}
	for name, e := range testutil.ExpectedTables(t) {
		if e.Readable() {
			out[name] = e
		}
	}
	if len(out) < 30 {
		t.Fatalf("only %d readable tables in expected.json", len(out))
	}
	return out
}

// copyTable copies a shared test table into a fresh temp dir (the shared
// tree is never written) and opens it.
func copyTable(t *testing.T, name string) (*delta.Table, string) {
	t.Helper()
	dir := testutil.CopyDeltaTable(t, name)
	return tabletest.Open(t, "file://"+dir), dir
}

// partitionJobs groups the snapshot's files into one job per partition
// (files in snapshot order), jobs ordered by partition key.
func partitionJobs(snap *delta.Snapshot) []*Job {
	byKey := map[string]*Job{}
	var keys []string
	for _, f := range snap.Files {
		k, _ := json.Marshal(f.PartitionValues)
		j, ok := byKey[string(k)]
		if !ok {
			j = &Job{ID: fmt.Sprintf("part-%d", len(byKey))}
			byKey[string(k)] = j
			keys = append(keys, string(k))
		}
		j.Sources = append(j.Sources, f)
	}
	sort.Strings(keys)
	jobs := make([]*Job, len(keys))
	for i, k := range keys {
		jobs[i] = byKey[k]
	}
	return jobs
}

// liveRows reads every live row of add with the Delta core's scan.
func liveRows(t *testing.T, tbl *delta.Table, snap *delta.Snapshot, add *actions.Add) []parquet.Row {
	t.Helper()
	s, err := deltascan.OpenFileScan(context.Background(), tbl, snap, add, deltascan.ScanOptions{})
	if err != nil {
		t.Fatalf("scan %s: %v", add.Path, err)
	}
	defer s.Close()
	var out []parquet.Row
	buf := make([]parquet.Row, 7) // odd batch size on purpose
	for {
		n, err := s.ReadRows(buf, nil)
		for _, r := range buf[:n] {
			out = append(out, r.Clone())
		}
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("scan %s: %v", add.Path, err)
		}
	}
}

// rewriteRefusals are tables whose rewrite must fail with an error naming
// the reason (the writer cannot produce files the table requires).
var rewriteRefusals = map[string]string{}

func TestRewriteRoundTripsEveryReadableTable(t *testing.T) {
	tables := readableTables(t)
	names := make([]string, 0, len(tables))
	for n := range tables {
		names = append(names, n)
	}
	sort.Strings(names)
	targets := []struct {
		name          string
		target        int64
		forceScan     bool
		rowGroupBytes int64
		noCopy        bool
	}{
		{"one output per partition", 0, false, 0, false},
		{"an output per source (1-byte target)", 1, false, 0, false},
		{"every source through the Delta scan", 1, true, 0, false},
		{"page-copy fast path (every row group counts as large)", 0, false, 1 << 10, false},
		{"row path only (copy and pack paths off)", 0, false, 0, true},
	}
	direct, copied, packed := 0, 0, 0
	defer func() {
		if direct == 0 || copied == 0 || packed == 0 {
			t.Errorf("direct path taken by %d sources, copy path by %d row groups, pack path by %d sources: want all used", direct, copied, packed)
		}
		t.Logf("%d sources read directly, %d row groups copied, %d sources packed", direct, copied, packed)
	}()
	for _, name := range names {
		exp := tables[name]
		for _, tg := range targets {
			t.Run(name+"/"+tg.name, func(t *testing.T) {
				ctx := context.Background()
				tbl, _ := copyTable(t, name)
				snap, err := loadLatest(ctx, tbl)
				if err != nil {
					t.Fatalf("load snapshot: %v", err)
				}
				opts := DefaultOptions()
				opts.TargetFileSize = tg.target
				opts.BatchRows = 3 // many batches even on tiny tables
				opts.forceScan = tg.forceScan
				opts.DisableCopyPath = tg.noCopy
				if tg.rowGroupBytes > 0 {
					opts.RowGroupBytes = tg.rowGroupBytes
					opts.copyMinBytes = 1
				}
				jobs := partitionJobs(snap)
				objs := &attempt.Objects{}
				results, err := RewriteAll(ctx, tbl, snap, jobs, objs, opts)
				if want, ok := rewriteRefusals[name]; ok {
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Fatalf("rewrite err = %v, want one mentioning %q", err, want)
					}
					return
				}
				if err != nil {
					t.Fatalf("rewrite: %v", err)
				}
				var total int64
				for i, res := range results {
					total += checkResult(t, tbl, snap, jobs[i], res, tg.target)
					if tg.forceScan && res.DirectSources != 0 {
						t.Errorf("job %s read %d sources directly despite forceScan", res.Job.ID, res.DirectSources)
					}
					direct += res.DirectSources
					copied += res.CopiedRowGroups
					packed += res.PackedSources
					if tg.noCopy && res.CopiedRowGroups+res.PackedSources != 0 {
						t.Errorf("job %s copied %d row groups and packed %d sources with the paths off", res.Job.ID, res.CopiedRowGroups, res.PackedSources)
					}
					if tg.rowGroupBytes == 0 && res.CopiedRowGroups != 0 {
						t.Errorf("job %s copied %d small row groups", res.Job.ID, res.CopiedRowGroups)
					}
				}
				if total != exp.LiveRows {
					t.Errorf("rewrote %d live rows, expected.json says %d", total, exp.LiveRows)
				}
				for _, res := range results {
					if err := cleanAttempt(ctx, objs, tbl); err != nil {
						t.Fatal(err)
					}
					for _, o := range res.Outputs {
						if _, err := tbl.Bucket.Attributes(ctx, o.Key); err == nil {
							t.Errorf("output %s still exists after Abort", o.Key)
						}
					}
				}
			})
		}
	}
}

// checkResult verifies one job's outputs against its sources and returns
// the number of rows written.
func checkResult(t *testing.T, tbl *delta.Table, snap *delta.Snapshot, job *Job, res *Result, target int64) int64 {
	t.Helper()
	if len(res.Composition) != len(job.Sources) {
		t.Fatalf("composition has %d runs for %d sources", len(res.Composition), len(job.Sources))
	}
	// Read every output back through the Delta core, via its new add.
	outRows := make([][]parquet.Row, len(res.Outputs))
	var written int64
	for i, o := range res.Outputs {
		a := o.Add
		if a.DataChange || a.DeletionVector != nil {
			t.Errorf("output %d: dataChange=%v dv=%v, want false and none", i, a.DataChange, a.DeletionVector)
		}
		if !actions.SamePartitionValues(a.PartitionValues, job.Sources[0].PartitionValues) {
			t.Errorf("output %d: partition values %v, want the sources' %v", i, a.PartitionValues, job.Sources[0].PartitionValues)
		}
		key, err := a.Key()
		if err != nil || key != o.Key {
			t.Errorf("output %d: path %q decodes to %q (%v), want key %q", i, a.Path, key, err, o.Key)
		}
		fi, err := tbl.Bucket.Attributes(context.Background(), key)
		if err != nil {
			t.Fatalf("output %d: %v", i, err)
		}
		if fi.Size != a.Size {
			t.Errorf("output %d: add.size %d, object %d bytes", i, a.Size, fi.Size)
		}
		var st stats.Stats
		if err := json.Unmarshal([]byte(a.Stats), &st); err != nil || st.NumRecords == nil {
			t.Fatalf("output %d: stats %q: %v", i, a.Stats, err)
		}
		if *st.NumRecords != o.NumRecords || !st.Tight() {
			t.Errorf("output %d: stats numRecords=%v tightBounds=%v, want %d and tight bounds", i, *st.NumRecords, st.TightBounds, o.NumRecords)
		}
		outRows[i] = liveRows(t, tbl, snap, a)
		if int64(len(outRows[i])) != o.NumRecords {
			t.Errorf("output %d: read %d rows, NumRecords %d", i, len(outRows[i]), o.NumRecords)
		}
		written += o.NumRecords
	}
	// Runs are contiguous, in write order, and hold the sources' live rows.
	nextOut, nextOff := 0, int64(0)
	for k, run := range res.Composition {
		src := job.Sources[k]
		if run.Source != src.Path {
			t.Fatalf("run %d is for %s, want %s (write order)", k, run.Source, src.Path)
		}
		if run.Output < 0 || run.Output >= len(res.Outputs) {
			if len(res.Outputs) > 0 || run.Output != -1 {
				t.Fatalf("run %d (%s) names output %d of %d", k, src.Path, run.Output, len(res.Outputs))
			}
		} else if run.Target != res.Outputs[run.Output].Add.Path {
			t.Fatalf("run %d target %q, output %d is %q", k, run.Target, run.Output, res.Outputs[run.Output].Add.Path)
		}
		if run.Output != nextOut {
			if run.Output != nextOut+1 || nextOff != res.Outputs[nextOut].NumRecords {
				t.Fatalf("run %d: output %d offset %d, previous run ended at output %d row %d", k, run.Output, run.RowOffsetInTarget, nextOut, nextOff)
			}
			nextOut, nextOff = run.Output, 0
		}
		if run.RowOffsetInTarget != nextOff {
			t.Fatalf("run %d: offset %d, want %d", k, run.RowOffsetInTarget, nextOff)
		}
		want := liveRows(t, tbl, snap, src)
		if int64(len(want)) != run.LiveRows || run.LiveRows != run.SourceNumPhysicalRecords-src.NumDeleted() {
			t.Fatalf("run %d: LiveRows %d, scanned %d, physical %d - deleted %d", k, run.LiveRows, len(want), run.SourceNumPhysicalRecords, src.NumDeleted())
		}
		if run.LiveRows > 0 {
			got := outRows[run.Output][run.RowOffsetInTarget : run.RowOffsetInTarget+run.LiveRows]
			for r := range want {
				if !want[r].Equal(got[r]) {
					t.Fatalf("run %d (%s) row %d: output has %v, source %v", k, src.Path, r, got[r], want[r])
				}
			}
		}
		nextOff += run.LiveRows
		if target == 1 && k > 0 && run.LiveRows > 0 && res.Composition[k-1].LiveRows > 0 && run.Output == res.Composition[k-1].Output {
			t.Errorf("run %d shares output %d with run %d despite a 1-byte target", k, run.Output, k-1)
		}
	}
	// The commit's check of the record agrees.
	deleted := map[string]int64{}
	for _, src := range job.Sources {
		deleted[src.Path] = src.NumDeleted()
	}
	rows := make([]int64, len(res.Outputs))
	for i, o := range res.Outputs {
		rows[i] = o.NumRecords
	}
	if err := composition.Check(res.Composition, deleted, rows); err != nil {
		t.Errorf("composition.Check: %v", err)
	}
	if len(res.Outputs) > 0 && nextOff != res.Outputs[len(res.Outputs)-1].NumRecords {
		t.Errorf("runs end at row %d of the last output, which has %d rows", nextOff, res.Outputs[len(res.Outputs)-1].NumRecords)
	}
	return written
}
