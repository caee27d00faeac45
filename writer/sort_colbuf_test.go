package writer

import (
	"math/rand/v2"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestColBufGatherEqualsValue gathers every kind the column path holds,
// with and without nulls, in a random order, and compares each gathered
// value (kind, bits, levels, column) with the row's value built one at a
// time.
func TestColBufGatherEqualsValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	mk := map[parquet.Kind]func(i int) parquet.Value{
		parquet.Boolean: func(i int) parquet.Value { return parquet.BooleanValue(i%3 == 0) },
		parquet.Int32:   func(i int) parquet.Value { return parquet.Int32Value(int32(i*7919 - 1000)) },
		parquet.Int64:   func(i int) parquet.Value { return parquet.Int64Value(int64(i) * -104729) },
		parquet.Float:   func(i int) parquet.Value { return parquet.FloatValue(float32(i) / 3) },
		parquet.Double:  func(i int) parquet.Value { return parquet.DoubleValue(float64(i) / -7) },
		parquet.ByteArray: func(i int) parquet.Value {
			return parquet.ByteArrayValue([]byte("v" + string(rune('a'+i%26)) + string(make([]byte, i%5))))
		},
		parquet.FixedLenByteArray: func(i int) parquet.Value { return parquet.FixedLenByteArrayValue([]byte{byte(i), byte(i >> 8), 1}) },
	}
	const rows = 1000
	for kind, f := range mk {
		for _, maxDef := range []int{0, 1, 2} {
			b := newColBuf(5, kind, maxDef, rows)
			want := make([]parquet.Value, rows)
			for i := range rows {
				def := maxDef
				if maxDef > 0 && i%4 == 1 {
					def = i % maxDef // a null at a lower level
				}
				v := parquet.Value{}
				if def == maxDef {
					v = f(i)
				}
				want[i] = v.Level(0, def, 5)
			}
			for lo := 0; lo < rows; lo += 300 {
				if err := b.append(want[lo:min(rows, lo+300)]); err != nil {
					t.Fatal(err)
				}
			}
			b.dropFullDefs()
			es := make([]sortEntry, rows)
			for i, r := range rng.Perm(rows) {
				es[i] = sortEntry{ref: uint32(r)}
			}
			got := make([]parquet.Value, rows)
			b.gather(got, es)
			for k, e := range es {
				w := want[e.ref]
				g := got[k]
				if g.Kind() != w.Kind() || g.IsNull() != w.IsNull() || g.DefinitionLevel() != w.DefinitionLevel() ||
					g.RepetitionLevel() != 0 || g.Column() != 5 || !parquet.Equal(g, w) {
					t.Fatalf("%v maxDef %d: gathered %d (row %d) = %#v, want %#v", kind, maxDef, k, e.ref, g, w)
				}
				if v := b.value(int(e.ref)); !parquet.Equal(v, w) || v.DefinitionLevel() != w.DefinitionLevel() {
					t.Fatalf("%v maxDef %d: value(%d) = %#v, want %#v", kind, maxDef, e.ref, v, w)
				}
			}
		}
	}
}
