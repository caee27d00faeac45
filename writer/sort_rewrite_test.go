package writer

import (
	"context"
	"errors"
	"io"
	"sort"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/delta"
)

// physRows reads the live rows of add with their physical indexes.
func physRows(t *testing.T, tbl *delta.Table, snap *delta.Snapshot, add *delta.Add) map[int64]parquet.Row {
	t.Helper()
	s, err := delta.OpenFileScan(context.Background(), tbl, snap, add, delta.ScanOptions{})
	if err != nil {
		t.Fatalf("scan %s: %v", add.Path, err)
	}
	defer s.Close()
	out := map[int64]parquet.Row{}
	buf := make([]parquet.Row, 5)
	idx := make([]int64, 5)
	for {
		n, err := s.ReadRows(buf, idx)
		for i, r := range buf[:n] {
			out[idx[i]] = r.Clone()
		}
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("scan %s: %v", add.Path, err)
		}
	}
}

// sortableColumns picks up to two non-repeated leaf columns (first and
// last) of the data schema as clustering columns.
func sortableColumns(schema *parquet.Schema) [][]string {
	var paths [][]string
	for _, p := range schema.Columns() {
		leaf, ok := schema.Lookup(p...)
		if ok && leaf.MaxRepetitionLevel == 0 {
			paths = append(paths, p)
		}
	}
	switch len(paths) {
	case 0, 1:
		return paths
	}
	return [][]string{paths[0], paths[len(paths)-1]}
}

// TestSortedRewriteRoundTripsEveryReadableTable sorts every readable test
// table (all types, nested columns, DVs, column mapping) with a tiny memory
// bound: every output row must be the source row its origin names, and
// every live source row must appear exactly once.
func TestSortedRewriteRoundTripsEveryReadableTable(t *testing.T) {
	tables := readableTables(t)
	names := make([]string, 0, len(tables))
	for n := range tables {
		names = append(names, n)
	}
	sort.Strings(names)
	spilled, originSpilled, sorted := 0, 0, 0
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			tbl, _ := copyTable(t, name)
			snap, err := loadLatest(ctx, tbl)
			if err != nil {
				t.Fatalf("load snapshot: %v", err)
			}
			cols := sortableColumns(mustDataSchema(t, snap))
			if len(cols) == 0 {
				t.Skip("no non-repeated leaf column to sort on")
			}
			opts := DefaultOptions()
			opts.BatchRows = 3
			opts.TargetFileSize = 2 << 10
			opts.Sort = SortOptions{MemoryBytes: 4 << 10, OriginMemoryBytes: 5 * originEntrySize, Buckets: 8}
			var total int64
			for _, job := range partitionJobs(snap) {
				job.Sort = &SortSpec{Columns: cols, Curve: "hilbert"}
				job.Tags = map[string]string{"ZCUBE_ID": "z"}
				job.ClusteringProvider = "liquid"
				res, err := Rewrite(ctx, tbl, snap, job, opts)
				if err != nil {
					t.Fatalf("sorted rewrite of %s on %v: %v", job.ID, cols, err)
				}
				total += checkSorted(t, tbl, snap, job, res)
				if res.Sort.Spills > 0 {
					spilled++
				}
				if res.Sort.OriginSpilled {
					originSpilled++
				}
				sorted++
				if err := res.Abort(ctx); err != nil {
					t.Fatal(err)
				}
				for _, o := range res.Outputs {
					if _, err := tbl.Bucket.Attributes(ctx, o.Key); err == nil {
						t.Errorf("output %s still exists after Abort", o.Key)
					}
				}
			}
			if total != tables[name].LiveRows {
				t.Errorf("rewrote %d live rows, expected.json says %d", total, tables[name].LiveRows)
			}
		})
	}
	if spilled == 0 || originSpilled == 0 {
		t.Errorf("of %d sorted jobs, %d spilled sort runs and %d spilled origins: want both exercised", sorted, spilled, originSpilled)
	}
	t.Logf("%d sorted jobs, %d spilled sort runs, %d spilled origins", sorted, spilled, originSpilled)
}

// checkSorted verifies a sorted job's outputs row by row against the origin
// map and returns the rows written.
func checkSorted(t *testing.T, tbl *delta.Table, snap *delta.Snapshot, job *Job, res *Result) int64 {
	t.Helper()
	if len(res.Composition) != 0 || res.Origins == nil || res.Sort == nil {
		t.Fatalf("sorted job: composition %d runs, origins %v, sort %v", len(res.Composition), res.Origins != nil, res.Sort)
	}
	src := make([]map[int64]parquet.Row, len(job.Sources))
	var live int64
	for i, s := range job.Sources {
		src[i] = physRows(t, tbl, snap, s)
		live += int64(len(src[i]))
	}
	if res.Origins.NumOutputs() != len(res.Outputs) {
		t.Fatalf("origin map covers %d outputs, job wrote %d", res.Origins.NumOutputs(), len(res.Outputs))
	}
	seen := map[[2]int64]bool{}
	var written int64
	for o, out := range res.Outputs {
		a := out.Add
		if a.ClusteringProvider == nil || *a.ClusteringProvider != "liquid" || a.Tags["ZCUBE_ID"] != "z" || a.DataChange {
			t.Errorf("output %d: provider %v tags %v dataChange %v", o, a.ClusteringProvider, a.Tags, a.DataChange)
		}
		st, err := delta.ParseStats(a.Stats)
		if err != nil || st.NumRecords == nil || *st.NumRecords != out.NumRecords || !st.Tight() {
			t.Errorf("output %d: stats %s (%v)", o, a.Stats, err)
		}
		rows := liveRows(t, tbl, snap, a)
		if int64(len(rows)) != out.NumRecords {
			t.Fatalf("output %d: %d rows read, NumRecords %d", o, len(rows), out.NumRecords)
		}
		for k, r := range rows {
			si, phys, err := res.Origins.Origin(o, int64(k))
			if err != nil {
				t.Fatal(err)
			}
			want, ok := src[si][phys]
			if !ok {
				t.Fatalf("output %d row %d: origin (%d, %d) is not a live source row", o, k, si, phys)
			}
			if seen[[2]int64{int64(si), phys}] {
				t.Fatalf("output %d row %d: origin (%d, %d) used twice", o, k, si, phys)
			}
			seen[[2]int64{int64(si), phys}] = true
			if !want.Equal(r) {
				t.Fatalf("output %d row %d: %v, origin (%s row %d) holds %v", o, k, r, job.Sources[si].Path, phys, want)
			}
		}
		written += out.NumRecords
	}
	if written != live {
		t.Fatalf("wrote %d rows, sources hold %d live", written, live)
	}
	return written
}
