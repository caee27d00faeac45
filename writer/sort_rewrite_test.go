package writer

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	deltascan "github.com/compactord/compactord/delta/scan"

	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/stats"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/curve"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

// physRows reads the live rows of add with their physical indexes.
func physRows(t *testing.T, tbl *delta.Table, snap *delta.Snapshot, add *actions.Add) map[int64]parquet.Row {
	t.Helper()
	s, err := deltascan.OpenFileScan(context.Background(), tbl, snap, add, deltascan.ScanOptions{})
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
// table (all types, nested columns, DVs, column mapping) on both paths, the
// rows one with a tiny memory bound: every output row must be the source
// row its origin names, every live source row must appear exactly once,
// and the column path must write the rows in the row path's order.
func TestSortedRewriteRoundTripsEveryReadableTable(t *testing.T) {
	tables := readableTables(t)
	names := slices.Sorted(maps.Keys(tables))
	spilled, originSpilled, sorted, columnar, spilledColumns := 0, 0, 0, 0, 0
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
				// The row path, the column path in memory and the column
				// path spilling a sorted run per source (a bound of 1 byte).
				var orders [3][][2]int64
				for p, rowPath := range []bool{true, false, false} {
					opts.DisableCopyPath = rowPath
					opts.Sort.ColumnMemoryBytes = 0
					if p == 2 {
						opts.Sort.ColumnMemoryBytes = 1
					}
					objs := &attempt.Objects{}
					res, err := Rewrite(ctx, tbl, snap, job, objs, opts)
					if err != nil {
						t.Fatalf("sorted rewrite of %s on %v (row path %v, column bound %d): %v", job.ID, cols, rowPath, opts.Sort.ColumnMemoryBytes, err)
					}
					if rowPath && res.Sort.Columnar {
						t.Fatalf("DisableCopyPath: the job took the column path")
					}
					if p == 2 && res.Sort.Columnar {
						if res.Sort.Runs == 0 && res.Sort.Rows > 0 {
							t.Fatalf("column bound of 1 byte: the column path did not spill (%+v)", res.Sort)
						}
						spilledColumns++
					}
					n := checkSorted(t, tbl, snap, job, res)
					if rowPath {
						total += n
					}
					orders[p] = originOrder(t, res)
					if res.Sort.Spills > 0 {
						spilled++
					}
					if res.Sort.OriginSpilled {
						originSpilled++
					}
					if res.Sort.Columnar {
						columnar++
					}
					sorted++
					if err := cleanAttempt(ctx, objs, tbl); err != nil {
						t.Fatal(err)
					}
					for _, o := range res.Outputs {
						if _, err := tbl.Bucket.Attributes(ctx, o.Key); err == nil {
							t.Errorf("output %s still exists after Abort", o.Key)
						}
					}
				}
				if !slices.Equal(orders[0], orders[1]) {
					t.Fatalf("%s: the column path wrote the rows in another order than the row path", job.ID)
				}
				if !slices.Equal(orders[0], orders[2]) {
					t.Fatalf("%s: the spilling column path wrote the rows in another order than the row path", job.ID)
				}
				// Into one output the column path folds the statistics as it
				// reads the columns: they must be the row path's.
				one := opts
				one.TargetFileSize = 1 << 30
				var stats [3]string
				for p, rowPath := range []bool{true, false, false} {
					one.DisableCopyPath = rowPath
					one.Sort.ColumnMemoryBytes = 0
					if p == 2 {
						one.Sort.ColumnMemoryBytes = 1
					}
					objs := &attempt.Objects{}
					res, err := Rewrite(ctx, tbl, snap, job, objs, one)
					if err != nil {
						t.Fatalf("sorted rewrite of %s into one output (row path %v): %v", job.ID, rowPath, err)
					}
					checkSorted(t, tbl, snap, job, res)
					if len(res.Outputs) == 1 {
						stats[p] = res.Outputs[0].Add.Stats
					} else if len(res.Outputs) > 1 {
						t.Fatalf("%d outputs, want one", len(res.Outputs))
					}
					_ = res.Origins.Close()
					if err := cleanAttempt(ctx, objs, tbl); err != nil {
						t.Fatal(err)
					}
				}
				if stats[0] != stats[1] || stats[0] != stats[2] {
					t.Fatalf("%s into one output: statistics\n%s on the row path,\n%s on the column path,\n%s spilling", job.ID, stats[0], stats[1], stats[2])
				}
			}
			if total != tables[name].LiveRows {
				t.Errorf("rewrote %d live rows, expected.json says %d", total, tables[name].LiveRows)
			}
		})
	}
	if spilled == 0 || originSpilled == 0 || columnar == 0 || spilledColumns == 0 {
		t.Errorf("of %d sorted jobs, %d spilled sort runs, %d spilled origins, %d took the column path and %d spilled on it: want each exercised", sorted, spilled, originSpilled, columnar, spilledColumns)
	}
	t.Logf("%d sorted jobs, %d spilled sort runs, %d spilled origins, %d column path", sorted, spilled, originSpilled, columnar)
}

// originOrder is the (source, physical row) of every output row of a
// sorted job, outputs in order: the job's row order whatever its splits.
func originOrder(t *testing.T, res *Result) [][2]int64 {
	t.Helper()
	var out [][2]int64
	for o, w := range res.Outputs {
		for k := range w.NumRecords {
			si, phys, err := res.Origins.Origin(o, k)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, [2]int64{int64(si), phys})
		}
	}
	return out
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
		st, err := stats.ParseStats(a.Stats)
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

// countdownCtx reports cancellation once Err has been called n times, so a
// rewrite fails at a chosen point deep inside the sort or the writing.
type countdownCtx struct {
	context.Context
	n atomic.Int64
}

func (c *countdownCtx) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

func TestFailedSortedRewriteLeavesNothing(t *testing.T) {
	tbl, snap := loadCopy(t, "ckpt-v2-json-sidecars-101-files")
	cols := sortableColumns(mustDataSchema(t, snap))
	before := tabletest.Keys(t, tbl)
	check := func(t *testing.T, spill string, objs *attempt.Objects, err error, want string) {
		t.Helper()
		if cerr := cleanAttempt(context.Background(), objs, tbl); cerr != nil {
			t.Fatal(cerr)
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Rewrite err = %v, want one mentioning %q", err, want)
		}
		if left, _ := os.ReadDir(spill); len(left) != 0 {
			t.Errorf("%d spill files left behind", len(left))
		}
		if after := tabletest.Keys(t, tbl); !slices.Equal(before, after) {
			t.Errorf("objects left after cleaning a failed rewrite:\nbefore %v\nafter  %v", before, after)
		}
	}
	opts := DefaultOptions()
	opts.TargetFileSize = 1 // an output per batch
	opts.BatchRows = 2
	opts.Sort = SortOptions{MemoryBytes: 4 << 10, OriginMemoryBytes: originEntrySize}
	t.Run("a missing source", func(t *testing.T) {
		gone := cloneAdd(snap.Files[2])
		gone.Path = "part-00099-does-not-exist.c000.snappy.parquet"
		opts.SpillDir = t.TempDir()
		objs := &attempt.Objects{}
		_, err := Rewrite(context.Background(), tbl, snap, &Job{ID: "j", Sources: []*actions.Add{snap.Files[0], snap.Files[1], gone}, Sort: &SortSpec{Columns: cols}}, objs, opts)
		check(t, opts.SpillDir, objs, err, "does-not-exist")
	})
	t.Run("bucket counts not matching the columns", func(t *testing.T) {
		opts.SpillDir = t.TempDir()
		objs := &attempt.Objects{}
		_, err := Rewrite(context.Background(), tbl, snap, &Job{ID: "j", Sources: snap.Files[:2], Sort: &SortSpec{Columns: cols, Buckets: make([]int, len(cols)+1)}}, objs, opts)
		check(t, opts.SpillDir, objs, err, "bucket counts")
	})
	t.Run("an unknown clustering column", func(t *testing.T) {
		opts.SpillDir = t.TempDir()
		objs := &attempt.Objects{}
		_, err := Rewrite(context.Background(), tbl, snap, &Job{ID: "j", Sources: snap.Files[:2], Sort: &SortSpec{Columns: [][]string{{"no_such_col"}}}}, objs, opts)
		check(t, opts.SpillDir, objs, err, `"no_such_col"`)
	})
	// On every path (the column path in memory, spilling sorted runs, the
	// row path): count the checks of a whole run, then cancel at points
	// through it.
	for _, tc := range []struct {
		name      string
		rowPath   bool
		columnMem int
	}{{"column path", false, 0}, {"column path spilling runs", false, 1}, {"row path", true, 0}} {
		rowPath := tc.rowPath
		t.Run(tc.name, func(t *testing.T) {
			opts.DisableCopyPath = rowPath
			opts.Sort.ColumnMemoryBytes = tc.columnMem
			probe := &countdownCtx{Context: context.Background()}
			probe.n.Store(1 << 40)
			opts.SpillDir = t.TempDir()
			objs := &attempt.Objects{}
			res, err := Rewrite(probe, tbl, snap, &Job{ID: "j", Sources: snap.Files[:6], Sort: &SortSpec{Columns: cols}}, objs, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Outputs) < 3 || res.Sort.Columnar == rowPath || (tc.columnMem > 0) != (res.Sort.Runs > 1) {
				t.Fatalf("%d outputs, column path %v, %d sorted runs: want several outputs, on the path asked", len(res.Outputs), res.Sort.Columnar, res.Sort.Runs)
			}
			if err := cleanAttempt(context.Background(), objs, tbl); err != nil {
				t.Fatal(err)
			}
			total := 1<<40 - probe.n.Load()
			failed, succeeded := 0, 0
			for _, n := range []int64{0, total / 10, total / 3, total / 2, total * 9 / 10, total - 1, total} {
				t.Run(fmt.Sprintf("canceled after %d checks", n), func(t *testing.T) {
					opts.SpillDir = t.TempDir()
					ctx := &countdownCtx{Context: context.Background()}
					ctx.n.Store(n)
					objs := &attempt.Objects{}
					_, err := Rewrite(ctx, tbl, snap, &Job{ID: "j", Sources: snap.Files[:6], Sort: &SortSpec{Columns: cols}}, objs, opts)
					if err == nil {
						succeeded++
						if err := cleanAttempt(context.Background(), objs, tbl); err != nil {
							t.Fatal(err)
						}
						if after := tabletest.Keys(t, tbl); !slices.Equal(before, after) {
							t.Errorf("objects left after cleaning the attempt")
						}
						return
					}
					failed++
					check(t, opts.SpillDir, objs, err, "context canceled")
				})
			}
			if failed != 6 || succeeded != 1 {
				t.Errorf("%d runs canceled, %d completed: the countdowns do not cover the run", failed, succeeded)
			}
		})
	}
}

// TestSortedRewriteWritesRowsInCurveOrder recomputes, independently, the
// curve key of every output row (bucket bounds from all values, as the
// writer draws them when its sample holds every row) and checks that the
// outputs are in (key, source, physical row) order, across outputs too.
func TestSortedRewriteWritesRowsInCurveOrder(t *testing.T) {
	_, tbl, snap := generatedTable(t, 3<<19, 128<<10, 256<<10, 5, nil)
	ctx := context.Background()
	schema := mustDataSchema(t, snap)
	tests := []struct {
		name    string
		cols    [][]string
		curve   curve.Curve
		buckets []int // SortSpec.Buckets
	}{
		{"one nested int column (z-order)", [][]string{{"meta", "version"}}, curve.ZOrder, nil},
		{"long and string (hilbert)", [][]string{{"quantity"}, {"category"}}, curve.Hilbert, nil},
		{"timestamp, int and double (hilbert)", [][]string{{"event_time"}, {"user_id"}, {"amount"}}, curve.Hilbert, nil},
		{"few event_time buckets, user_id capped, amount default", [][]string{{"event_time"}, {"user_id"}, {"amount"}}, curve.Hilbert, []int{3, 40, 0}},
	}
	for _, tt := range tests {
		for _, rowPath := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, row path %v", tt.name, rowPath), func(t *testing.T) {
				job := &Job{ID: "z", Sources: snap.Files, Sort: &SortSpec{Columns: tt.cols, Curve: "hilbert", Buckets: tt.buckets}}
				opts := DefaultOptions()
				opts.TargetFileSize = 256 << 10
				opts.Sort = SortOptions{MemoryBytes: 128 << 10, SampleSize: 1 << 20, Buckets: 1000}
				opts.DisableCopyPath = rowPath
				objs := &attempt.Objects{}
				res, err := Rewrite(ctx, tbl, snap, job, objs, opts)
				if err != nil {
					t.Fatal(err)
				}
				defer cleanAttempt(ctx, objs, tbl)
				if (rowPath && res.Sort.Spills == 0) || res.Sort.Columnar == rowPath || len(res.Outputs) < 2 || res.Sort.Curve != string(tt.curve) {
					t.Fatalf("sort stats %+v, %d outputs: want spills on the row path, the path asked, several outputs, curve %s", res.Sort, len(res.Outputs), tt.curve)
				}
				// Bounds from every live value of each column.
				leaves := make([]parquet.LeafColumn, len(tt.cols))
				values := make([][]parquet.Value, len(tt.cols))
				for d, p := range tt.cols {
					leaf, ok := schema.Lookup(p...)
					if !ok {
						t.Fatalf("no column %v", p)
					}
					leaves[d] = leaf
				}
				valueOf := func(r parquet.Row, d int) parquet.Value {
					for _, v := range r {
						if v.Column() == leaves[d].ColumnIndex {
							return v
						}
					}
					t.Fatalf("row without column %v", tt.cols[d])
					return parquet.Value{}
				}
				type sourceRow struct {
					origin [2]int64
					row    parquet.Row
				}
				var all []sourceRow
				for si, src := range snap.Files {
					for phys, r := range physRows(t, tbl, snap, src) {
						all = append(all, sourceRow{[2]int64{int64(si), phys}, r})
						for d := range tt.cols {
							if v := valueOf(r, d); !v.IsNull() {
								values[d] = append(values[d], v.Clone())
							}
						}
					}
				}
				buckets := make([]*curve.Bucketizer[parquet.Value], len(tt.cols))
				for d := range tt.cols {
					n := 1000
					if d < len(tt.buckets) && tt.buckets[d] > 0 {
						n = tt.buckets[d]
					}
					buckets[d] = curve.NewBucketizer(values[d], n, leaves[d].Node.Type().Compare)
					if got := res.Sort.BucketsPerColumn[d]; got != buckets[d].NumBuckets() || got > n {
						t.Fatalf("column %v: writer drew %d buckets, want %d (cap %d)", tt.cols[d], got, buckets[d].NumBuckets(), n)
					}
				}
				enc, err := curve.NewEncoder(tt.curve, len(tt.cols), curve.BitsFor(999))
				if err != nil {
					t.Fatal(err)
				}
				var prevKey []byte
				prevOrigin := [2]int64{-1, -1}
				n := 0
				for o, out := range res.Outputs {
					for k, r := range liveRows(t, tbl, snap, out.Add) {
						coords := make([]uint32, len(tt.cols))
						for d := range tt.cols {
							if v := valueOf(r, d); !v.IsNull() {
								coords[d] = buckets[d].Bucket(v)
							}
						}
						key, err := enc.Key(coords)
						if err != nil {
							t.Fatal(err)
						}
						si, phys, err := res.Origins.Origin(o, int64(k))
						if err != nil {
							t.Fatal(err)
						}
						origin := [2]int64{int64(si), phys}
						if c := bytes.Compare(prevKey, key); c > 0 || (c == 0 && (origin[0] < prevOrigin[0] || (origin[0] == prevOrigin[0] && origin[1] <= prevOrigin[1]))) {
							t.Fatalf("output %d row %d: key %x origin %v after key %x origin %v", o, k, key, origin, prevKey, prevOrigin)
						}
						prevKey, prevOrigin = key, origin
						n++
					}
				}
				if int64(n) != res.Sort.Rows {
					t.Fatalf("checked %d rows, sorted %d", n, res.Sort.Rows)
				}
				// The reference: every live source row keyed, sorted by
				// (key, source, physical row) with a plain comparison sort.
				type keyed struct {
					key    []byte
					origin [2]int64
				}
				ref := make([]keyed, 0, len(all))
				for _, sr := range all {
					coords := make([]uint32, len(tt.cols))
					for d := range tt.cols {
						if v := valueOf(sr.row, d); !v.IsNull() {
							coords[d] = buckets[d].Bucket(v)
						}
					}
					key, err := enc.Key(coords)
					if err != nil {
						t.Fatal(err)
					}
					ref = append(ref, keyed{key, sr.origin})
				}
				slices.SortFunc(ref, func(a, b keyed) int {
					if c := bytes.Compare(a.key, b.key); c != 0 {
						return c
					}
					if c := cmp.Compare(a.origin[0], b.origin[0]); c != 0 {
						return c
					}
					return cmp.Compare(a.origin[1], b.origin[1])
				})
				got := originOrder(t, res)
				if len(got) != len(ref) {
					t.Fatalf("%d rows written, %d in the sources", len(got), len(ref))
				}
				for i := range ref {
					if got[i] != ref[i].origin {
						t.Fatalf("row %d of the output order is source row %v, the reference sort has %v", i, got[i], ref[i].origin)
					}
				}
			})
		}
	}
}

// TestSpilledColumnSortEqualsInMemory sorts one job on the column path in
// memory and again under a column bound that cuts it into sorted runs of
// several sources each, merged from disk: the outputs' rows (every value)
// and their origins must be the same, in the same order.
func TestSpilledColumnSortEqualsInMemory(t *testing.T) {
	_, tbl, snap := generatedTable(t, 3<<20, 32<<10, 96<<10, 5, nil)
	ctx := context.Background()
	var srcBytes int64
	for _, f := range snap.Files {
		srcBytes += f.Size
	}
	job := &Job{ID: "z", Sources: snap.Files, Sort: &SortSpec{Columns: [][]string{{"event_time"}, {"user_id"}, {"category"}}, Curve: "hilbert"},
		Tags: map[string]string{"ZCUBE_ID": "z"}, ClusteringProvider: "liquid"}
	var rows [2][]parquet.Row
	var orders [2][][2]int64
	for p, bound := range []int{0, int(srcBytes) / 4} {
		opts := DefaultOptions()
		opts.TargetFileSize = 512 << 10
		opts.Sort = SortOptions{ColumnMemoryBytes: bound, OriginMemoryBytes: 1 << 10}
		objs := &attempt.Objects{}
		res, err := Rewrite(ctx, tbl, snap, job, objs, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer cleanAttempt(ctx, objs, tbl)
		if !res.Sort.Columnar || (p == 1) != (res.Sort.Runs > 0) || len(res.Outputs) < 2 {
			t.Fatalf("bound %d: sort stats %+v, %d outputs: want the column path, runs only under the bound, several outputs", bound, res.Sort, len(res.Outputs))
		}
		if p == 1 && (res.Sort.Runs < 2 || res.Sort.Runs*2 > len(snap.Files)) {
			t.Fatalf("bound %d: %d runs of %d sources, want several runs of several sources", bound, res.Sort.Runs, len(snap.Files))
		}
		checkSorted(t, tbl, snap, job, res)
		for _, o := range res.Outputs {
			rows[p] = append(rows[p], liveRows(t, tbl, snap, o.Add)...)
		}
		orders[p] = originOrder(t, res)
	}
	if !slices.Equal(orders[0], orders[1]) {
		t.Fatal("the spilled sort wrote the rows in another order")
	}
	if len(rows[0]) != len(rows[1]) {
		t.Fatalf("%d rows in memory, %d spilled", len(rows[0]), len(rows[1]))
	}
	for i := range rows[0] {
		if !rows[0][i].Equal(rows[1][i]) {
			t.Fatalf("row %d: %v in memory, %v spilled", i, rows[0][i], rows[1][i])
		}
	}
}
