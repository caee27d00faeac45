package writer

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/compactord/compactord/bench/gen"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/testutil"
)

// duckRows reads files with DuckDB (tools/duckcheck/rows.mjs): every row as
// a JSON object, ordered by id, without the rows deletedCSV lists.
func duckRows(t *testing.T, deletedCSV string, files []string) []string {
	t.Helper()
	node, script := testutil.DuckScript(t, "rows.mjs")
	args := []string{script}
	if deletedCSV != "" {
		args = append(args, "--deleted", deletedCSV)
	}
	cmd := exec.Command(node, append(args, files...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("duckdb rows: %v\n%s", err, stderr.String())
	}
	var rows []string
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		rows = append(rows, string(l))
	}
	return rows
}

// rowGroupCount is the number of row groups of the parquet files.
func rowGroupCount(t *testing.T, files []string) int {
	t.Helper()
	n := 0
	for _, f := range files {
		n += len(testutil.OpenParquet(t, f).RowGroups())
	}
	return n
}

// Sources written by DuckDB in every shape the rewrite meets (schema drift,
// reordered and alphabetical columns, widened types, deletion vectors) go
// column by column, and the outputs hold their live rows: read back by the
// Delta core against each source's scan (checkResult), and by DuckDB
// against the sources read with union_by_name (and the deleted positions
// anti-joined); their statistics agree with what DuckDB reads from them.
// Also with output row groups of one source each, so that several row
// groups are in the column encoder at once, and sorted on two clustering
// columns (the sorted column path, every output row held to its origin).
func TestRewriteOfDuckDBShapesKeepsTheirContent(t *testing.T) {
	_, shapes := testutil.DuckScript(t, "shapes.mjs")
	for _, shape := range gen.Shapes {
		t.Run(shape, func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join(t.TempDir(), shape)
			if err := gen.DuckShape(ctx, dir, shapes, shape, 4, 3000); err != nil {
				t.Fatal(err)
			}
			tbl, snap := openTable(t, dir)
			var sources []string
			var deleted, largest, total int64
			for _, f := range snap.Files {
				sources = append(sources, filepath.Join(dir, f.Path))
				deleted += f.NumDeleted()
				largest = max(largest, f.Size)
				total += f.Size
			}
			if (shape == "dv") != (deleted > 0) {
				t.Fatalf("%d rows deleted by deletion vectors", deleted)
			}
			csv := ""
			if shape == "dv" {
				csv = filepath.Join(dir, gen.DeletedCSV)
			}
			want := duckRows(t, csv, sources)
			for _, v := range []struct {
				name          string
				rowGroupBytes int64
				rowGroups     int // 0: several
				sorted        bool
				columnMemory  int // the sorted column path's bound: past it, sorted runs on disk
			}{
				{"one row group", 0, 1, false, 0},
				{"a row group per source", 2 * largest, len(snap.Files), false, 0},
				{"sorted on event_time and amount, column by column", 0, 1, true, 0},
				{"sorted on event_time and amount, spilling sorted runs", 0, 0, true, int(total / 2)},
			} {
				t.Run(v.name, func(t *testing.T) {
					opts := DefaultOptions()
					if v.rowGroupBytes > 0 {
						opts.RowGroupBytes = v.rowGroupBytes
					}
					opts.Sort.ColumnMemoryBytes = v.columnMemory
					job := &Job{ID: shape, Sources: snap.Files}
					if v.sorted {
						job.Sort = &SortSpec{Columns: [][]string{{"event_time"}, {"amount"}}}
						job.Tags = map[string]string{"ZCUBE_ID": "z"}
						job.ClusteringProvider = "liquid"
					}
					res, err := Rewrite(ctx, tbl, snap, job, &attempt.Objects{}, opts)
					if err != nil {
						t.Fatal(err)
					}
					var n int64
					if v.sorted {
						if !res.Sort.Columnar {
							t.Errorf("the sorted job went row by row")
						}
						if (v.columnMemory > 0) != (res.Sort.Runs > 1) {
							t.Errorf("column bound %d: %d sorted runs, want several exactly under a bound", v.columnMemory, res.Sort.Runs)
						}
						n = checkSorted(t, tbl, snap, job, res)
						_ = res.Origins.Close()
					} else {
						if res.PackedSources != len(snap.Files) {
							t.Errorf("%d of %d sources written column by column", res.PackedSources, len(snap.Files))
						}
						n = checkResult(t, tbl, snap, job, res, 0)
					}
					if n != 4*3000-deleted {
						t.Errorf("wrote %d rows, want %d", n, 4*3000-deleted)
					}
					var outputs []string
					for _, o := range res.Outputs {
						outputs = append(outputs, filepath.Join(dir, filepath.FromSlash(o.Key)))
					}
					if rgs := rowGroupCount(t, outputs); rgs != v.rowGroups && (v.rowGroups > 0 || rgs < 2) {
						t.Errorf("outputs have %d row groups, want %d (0: several)", rgs, v.rowGroups)
					}
					got := duckRows(t, "", outputs)
					if len(want) != len(got) {
						t.Fatalf("DuckDB reads %d rows from the outputs, %d live rows from the sources", len(got), len(want))
					}
					for i := range want {
						if want[i] != got[i] {
							t.Fatalf("row %d: DuckDB reads\n%s\nfrom the outputs, from the sources\n%s", i, got[i], want[i])
						}
					}
					duck := duckCheck(t, outputs)
					for i, o := range res.Outputs {
						checkDuckStats(t, snap, o, duck[outputs[i]])
					}
				})
			}
		})
	}
}
