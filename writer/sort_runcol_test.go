package writer

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// runTestValue is row i's value of a column of kind, null (at level 0)
// every fifth row when the column has levels.
func runTestValue(kind parquet.Kind, maxDef, i int) parquet.Value {
	if maxDef > 0 && i%5 == 2 {
		return parquet.Value{}.Level(0, 0, 0)
	}
	var v parquet.Value
	switch kind {
	case parquet.Boolean:
		v = parquet.BooleanValue(i%3 == 1)
	case parquet.Int32:
		v = parquet.Int32Value(int32(-i * 31))
	case parquet.Int64:
		v = parquet.Int64Value(int64(i) << 33)
	case parquet.Float:
		v = parquet.FloatValue(float32(i) * 0.25)
	case parquet.Double:
		v = parquet.DoubleValue(-float64(i) / 3)
	case parquet.ByteArray:
		v = parquet.ByteArrayValue([]byte("row-" + string(make([]byte, i%7)))) // some empty tails
	case parquet.FixedLenByteArray:
		v = parquet.FixedLenByteArrayValue([]byte{byte(i >> 8), byte(i)})
	}
	return v.Level(0, maxDef, 0)
}

// TestRunColumnsReadBackInSortedOrder writes columns of every kind (with
// and without nulls) into one run file, each in a random order of its
// rows, and reads them back in takes of varied sizes: every value (kind,
// bits, levels, column index) must be the row's, in the written order,
// and a take past the end fails.
func TestRunColumnsReadBackInSortedOrder(t *testing.T) {
	const rows = 2000
	rng := rand.New(rand.NewPCG(7, 9))
	f, err := os.Create(filepath.Join(t.TempDir(), "run"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type column struct {
		b    *colBuf
		want []parquet.Value // in written order
		sec  runSection
	}
	var next atomic.Int64
	var cols []column
	for _, kind := range []parquet.Kind{parquet.Boolean, parquet.Int32, parquet.Int64, parquet.Float, parquet.Double, parquet.ByteArray, parquet.FixedLenByteArray} {
		for _, maxDef := range []int{0, 1} {
			idx := len(cols)
			b := newColBuf(idx, kind, maxDef, rows)
			vals := make([]parquet.Value, rows)
			for i := range vals {
				v := runTestValue(kind, maxDef, i)
				vals[i] = v.Level(0, v.DefinitionLevel(), idx)
			}
			if err := b.append(vals); err != nil {
				t.Fatal(err)
			}
			b.dropFullDefs()
			es := make([]sortEntry, rows)
			want := make([]parquet.Value, rows)
			for k, r := range rng.Perm(rows) {
				es[k].Ref = uint32(r)
				want[k] = vals[r]
			}
			sec, err := writeRunColumn(f, &next, b, es)
			if err != nil {
				t.Fatal(err)
			}
			if sec.defs != (maxDef > 0) {
				t.Fatalf("%v maxDef %d: definition levels written %v", kind, maxDef, sec.defs)
			}
			cols = append(cols, column{b, want, sec})
		}
	}
	ident := identityEntries(gatherBatch)
	for idx, c := range cols {
		rc := newRunColumn(f, c.sec, idx, c.b.kind, c.b.maxDef)
		sizes := []int{1, 7, 0, 333, 64, 1000}
		for got, s := 0, 0; got < rows; s++ {
			n := min(sizes[s%len(sizes)], rows-got)
			if err := rc.take(n, ident); err != nil {
				t.Fatalf("column %d: take %d at row %d: %v", idx, n, got, err)
			}
			for range n {
				g, w := rc.next(), c.want[got]
				if g.Kind() != w.Kind() || g.IsNull() != w.IsNull() || g.DefinitionLevel() != w.DefinitionLevel() ||
					g.RepetitionLevel() != 0 || g.Column() != idx || !parquet.Equal(g, w) {
					t.Fatalf("column %d (%v, maxDef %d): row %d read back as %#v, want %#v", idx, c.b.kind, c.b.maxDef, got, g, w)
				}
				got++
			}
		}
		if err := rc.take(1, ident); err == nil {
			t.Errorf("column %d: a take past the end succeeded", idx)
		}
	}
}
