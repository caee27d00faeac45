package delta

import (
	"encoding/json"
	"strings"
	"testing"
	"unsafe"

	"github.com/compactord/compactord/delta/actions"
)

// Slim cuts stats to numRecords and the given columns, and reuses the
// files a previous slim snapshot shares (as Advance shares them) instead
// of cutting them again.
func TestSlimCutsStatsAndReusesSharedFiles(t *testing.T) {
	_, full := loadBenchTable(t, 2000)
	cols := [][]string{{"id"}}
	slim, err := full.Slim(cols, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, g := full.Files[7], slim.Files[7]
	if want := `{"numRecords":` + f.Stats[len(`{"numRecords":`):len(`{"numRecords":`)+4] + `,"minValues":{"id":`; len(g.Stats) >= len(f.Stats) || g.Stats[:len(want)] != want {
		t.Fatalf("slim stats %s of %s", g.Stats, f.Stats)
	}
	// A snapshot that shares all but one of the slim files, as Advance
	// returns after a commit adding one file.
	next := *slim
	next.Files = append([]*actions.Add{full.Files[0]}, slim.Files[1:]...)
	again, err := next.Slim(cols, slim)
	if err != nil {
		t.Fatal(err)
	}
	if again.Files[0] == full.Files[0] || again.Files[0].Stats != slim.Files[0].Stats {
		t.Fatalf("the new file was not cut: %s", again.Files[0].Stats)
	}
	for i := 1; i < len(again.Files); i++ {
		if again.Files[i] != slim.Files[i] {
			t.Fatalf("file %d cut again instead of reused", i)
		}
	}
	// Other columns: an already slim snapshot cannot be cut to them (its
	// stats lack what they may need), and from a whole one nothing is
	// reused.
	if _, err := next.Slim([][]string{{"score"}}, slim); err == nil {
		t.Fatal("a snapshot cut to id was cut to score")
	}
	whole := *full
	other, err := whole.Slim(nil, slim)
	if err != nil {
		t.Fatal(err)
	}
	if other.Files[1] == slim.Files[1] || other.Files[1].Stats[len(other.Files[1].Stats)-1] != '}' || len(other.Files[1].Stats) > 20 {
		t.Fatalf("slim without columns reused %p or kept %s", other.Files[1], other.Files[1].Stats)
	}
}

// The cut files Slim allocates together are still one copy per file: each
// keeps its own file's path, size and cut stats, and changing one changes
// neither its neighbours nor the whole snapshot's files.
func TestSlimFilesAreSeparateCopies(t *testing.T) {
	_, full := loadBenchTable(t, 2000)
	for _, n := range []int{1, slimChunk, slimChunk + 1, 3*slimChunk + 5} {
		whole := *full
		// Each file with its empty partitionValues as decoding the log's
		// JSON gives it: an empty map, not nil.
		whole.Files = make([]*actions.Add, n)
		for i, f := range full.Files[:n] {
			c := *f
			c.PartitionValues = map[string]*string{}
			whole.Files[i] = &c
		}
		slim, err := whole.Slim(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(slim.Files) != n {
			t.Fatalf("%d files: slim has %d", n, len(slim.Files))
		}
		for i, g := range slim.Files {
			f := whole.Files[i]
			if g == f || g.Path != f.Path || g.Size != f.Size || g.ModificationTime != f.ModificationTime || len(g.Stats) >= len(f.Stats) {
				t.Fatalf("%d files: file %d is %+v for %+v", n, i, g, f)
			}
			// An unpartitioned file keeps no empty map, and is still
			// written with its empty partitionValues.
			{
				b, err := json.Marshal(g)
				if err != nil {
					t.Fatal(err)
				}
				if g.PartitionValues != nil || !strings.Contains(string(b), `"partitionValues":{}`) {
					t.Fatalf("%d files: file %d keeps %#v, written as %s", n, i, g.PartitionValues, b)
				}
			}
		}
		// The paths of a chunk are one string: each path starts where
		// the one before it ends.
		for i := 1; i < min(n, slimChunk); i++ {
			prev, cur := slim.Files[i-1].Path, slim.Files[i].Path
			if unsafe.Add(unsafe.Pointer(unsafe.StringData(prev)), len(prev)) != unsafe.Pointer(unsafe.StringData(cur)) {
				t.Fatalf("%d files: paths %d and %d are not one allocation", n, i-1, i)
			}
		}
		sizes := make([]int64, n)
		for i, g := range slim.Files {
			sizes[i] = g.Size
		}
		for i, g := range slim.Files {
			g.Size = -1
			for k, h := range slim.Files {
				if k != i && h.Size != sizes[k] {
					t.Fatalf("%d files: changing file %d changed file %d", n, i, k)
				}
			}
			if whole.Files[i].Size == -1 {
				t.Fatalf("%d files: changing slim file %d changed the whole snapshot's", n, i)
			}
			g.Size = sizes[i]
		}
	}
}
