package writer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
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
				es[i] = sortEntry{Ref: uint32(r)}
			}
			got := make([]parquet.Value, rows)
			b.gather(got, es)
			for k, e := range es {
				w := want[e.Ref]
				g := got[k]
				if g.Kind() != w.Kind() || g.IsNull() != w.IsNull() || g.DefinitionLevel() != w.DefinitionLevel() ||
					g.RepetitionLevel() != 0 || g.Column() != 5 || !parquet.Equal(g, w) {
					t.Fatalf("%v maxDef %d: gathered %d (row %d) = %#v, want %#v", kind, maxDef, k, e.Ref, g, w)
				}
				if v := b.value(int(e.Ref)); !parquet.Equal(v, w) || v.DefinitionLevel() != w.DefinitionLevel() {
					t.Fatalf("%v maxDef %d: value(%d) = %#v, want %#v", kind, maxDef, e.Ref, v, w)
				}
			}
		}
	}
}

// TestColBufAppendPageEqualsAppend reads the pages of a file with plain and
// dictionary-encoded columns of every kind appendPage takes, with and
// without nulls and over several pages, into one buffer page by page and
// into another value by value (append), and compares what they hold.
func TestColBufAppendPageEqualsAppend(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	dict := func(n parquet.Node) parquet.Node { return parquet.Encoded(n, &parquet.RLEDictionary) }
	leaves := []struct {
		name string
		node parquet.Node
		mk   func(i int) parquet.Value
	}{
		{"i64", parquet.Leaf(parquet.Int64Type), func(i int) parquet.Value { return parquet.Int64Value(rng.Int64() >> 3) }},
		{"i64dict", dict(parquet.Leaf(parquet.Int64Type)), func(i int) parquet.Value { return parquet.Int64Value(rng.Int64N(40) - 20) }},
		{"i32", parquet.Leaf(parquet.Int32Type), func(i int) parquet.Value { return parquet.Int32Value(-int32(i)) }},
		{"i32dict", dict(parquet.Leaf(parquet.Int32Type)), func(i int) parquet.Value { return parquet.Int32Value(int32(rng.IntN(7))) }},
		{"f64", parquet.Leaf(parquet.DoubleType), func(i int) parquet.Value { return parquet.DoubleValue(rng.NormFloat64()) }},
		{"f32dict", dict(parquet.Leaf(parquet.FloatType)), func(i int) parquet.Value { return parquet.FloatValue(float32(rng.IntN(9)) / 2) }},
		{"str", parquet.String(), func(i int) parquet.Value { return parquet.ByteArrayValue(fmt.Appendf(nil, "row %d", i)) }},
		{"strdict", dict(parquet.String()), func(i int) parquet.Value { return parquet.ByteArrayValue(fmt.Appendf(nil, "c%d", rng.IntN(12))) }},
		{"fixed", parquet.Leaf(parquet.FixedLenByteArrayType(3)), func(i int) parquet.Value { return parquet.FixedLenByteArrayValue([]byte{byte(i), 2, byte(i >> 8)}) }},
		{"fixeddict", dict(parquet.Leaf(parquet.FixedLenByteArrayType(2))), func(i int) parquet.Value { return parquet.FixedLenByteArrayValue([]byte{byte(rng.IntN(5)), 1}) }},
	}
	mk := map[string]func(i int) parquet.Value{}
	for _, l := range leaves {
		mk[l.name] = l.mk
	}
	for _, optional := range []bool{false, true} {
		group := parquet.Group{}
		for _, l := range leaves {
			n := l.node
			if optional {
				n = parquet.Optional(n)
			}
			group[l.name] = n
		}
		schema := parquet.NewSchema("t", group)
		const rows = 5000
		var buf bytes.Buffer
		w := parquet.NewWriter(&buf, schema, parquet.PageBufferSize(2048))
		for i := range rows {
			row := make(parquet.Row, 0, len(leaves))
			for c, p := range schema.Columns() {
				leaf, _ := schema.Lookup(p...)
				v := mk[p[0]](i)
				if optional && i%7 == 3 {
					v = parquet.Value{}.Level(0, 0, c)
				} else {
					v = v.Level(0, leaf.MaxDefinitionLevel, c)
				}
				row = append(row, v)
			}
			if _, err := w.WriteRows([]parquet.Row{row}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatal(err)
		}
		for c, p := range f.Schema().Columns() {
			leaf, _ := f.Schema().Lookup(p...)
			kind := leaf.Node.Type().Kind()
			byPage := newColBuf(c, kind, leaf.MaxDefinitionLevel, rows)
			byValue := newColBuf(c, kind, leaf.MaxDefinitionLevel, rows)
			npages := 0
			for _, rg := range f.RowGroups() {
				pages := rg.ColumnChunks()[c].Pages()
				for {
					pg, err := pages.ReadPage()
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					npages++
					if err := byPage.appendPage(pg); err != nil {
						t.Fatalf("%s: %v", p[0], err)
					}
					vals := make([]parquet.Value, pg.NumValues())
					if n, err := pg.Values().ReadValues(vals); n != len(vals) || (err != nil && !errors.Is(err, io.EOF)) {
						t.Fatalf("%s: read %d of %d values: %v", p[0], n, len(vals), err)
					}
					if err := byValue.append(vals); err != nil {
						t.Fatal(err)
					}
					parquet.Release(pg)
				}
				_ = pages.Close()
				byPage.dropDict()
			}
			if npages < 2 {
				t.Fatalf("%s: %d pages, want several", p[0], npages)
			}
			if byPage.rows() != rows || !slices.Equal(byPage.defs, byValue.defs) || !slices.Equal(byPage.bits, byValue.bits) || !slices.Equal(byPage.words, byValue.words) ||
				!slices.Equal(byPage.offs, byValue.offs) || !bytes.Equal(byPage.data, byValue.data) {
				t.Fatalf("optional %v, column %s: the buffer read page by page differs from the one read value by value", optional, p[0])
			}
		}
	}
}
