package curve

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
)

// allCells enumerates every cell of a dims-dimensional grid of side 1<<nbits.
func allCells(dims, nbits int) [][]uint32 {
	side := uint32(1) << uint(nbits)
	total := 1
	for i := 0; i < dims; i++ {
		total *= int(side)
	}
	cells := make([][]uint32, 0, total)
	for n := 0; n < total; n++ {
		c := make([]uint32, dims)
		v := n
		for d := 0; d < dims; d++ {
			c[d] = uint32(v % int(side))
			v /= int(side)
		}
		cells = append(cells, c)
	}
	return cells
}

func TestHilbertVisitsEveryCellOnceAndStepsToANeighbour(t *testing.T) {
	for _, tc := range []struct{ dims, bits int }{
		{2, 1}, {2, 2}, {2, 3}, {2, 5}, {3, 1}, {3, 2}, {3, 3}, {4, 2}, {4, 3}, {5, 2},
	} {
		t.Run(fmt.Sprintf("%dd_%dbits", tc.dims, tc.bits), func(t *testing.T) {
			e, err := NewEncoder(Hilbert, tc.dims, tc.bits)
			if err != nil {
				t.Fatal(err)
			}
			cells := allCells(tc.dims, tc.bits)
			type kc struct {
				key  []byte
				cell []uint32
			}
			keyed := make([]kc, len(cells))
			seen := map[string]bool{}
			for i, c := range cells {
				k, err := e.Key(c)
				if err != nil {
					t.Fatal(err)
				}
				if seen[string(k)] {
					t.Fatalf("cell %v: key %x already used", c, k)
				}
				seen[string(k)] = true
				back, err := e.Decode(k)
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(back) != fmt.Sprint(c) {
					t.Fatalf("decode(key(%v)) = %v", c, back)
				}
				keyed[i] = kc{k, c}
			}
			sort.Slice(keyed, func(i, j int) bool { return bytes.Compare(keyed[i].key, keyed[j].key) < 0 })
			// The keys are exactly 0..N-1 (a bijection onto the index range).
			for i, k := range keyed {
				if got := keyInt(k.key); got != uint64(i) {
					t.Fatalf("sorted key %d has value %d", i, got)
				}
			}
			for i := 1; i < len(keyed); i++ {
				a, b := keyed[i-1].cell, keyed[i].cell
				diff := 0
				for d := range a {
					switch {
					case a[d] == b[d]:
					case a[d]+1 == b[d] || b[d]+1 == a[d]:
						diff++
					default:
						diff += 2
					}
				}
				if diff != 1 {
					t.Fatalf("index %d -> %d moves from %v to %v: not one step in one dimension", i-1, i, a, b)
				}
			}
			if first := keyed[0].cell; fmt.Sprint(first) != fmt.Sprint(make([]uint32, tc.dims)) {
				t.Fatalf("curve starts at %v, want the origin", first)
			}
		})
	}
}

func keyInt(k []byte) uint64 {
	var v uint64
	for _, b := range k {
		v = v<<8 | uint64(b)
	}
	return v
}

func TestZOrderInterleavesBitsMostSignificantFirst(t *testing.T) {
	e, err := NewEncoder(ZOrder, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		x, y uint32
		want uint64
	}{
		{0, 0, 0}, {1, 0, 0b000010}, {0, 1, 0b000001}, {7, 0, 0b101010}, {0, 7, 0b010101}, {5, 3, 0b100111}, {7, 7, 63},
	} {
		k, err := e.Key([]uint32{tc.x, tc.y})
		if err != nil {
			t.Fatal(err)
		}
		if got := keyInt(k); got != tc.want {
			t.Errorf("zorder(%d,%d) = %06b, want %06b", tc.x, tc.y, got, tc.want)
		}
	}
}

func TestOneColumnKeyIsTheBucketIdForBothCurves(t *testing.T) {
	for _, c := range []Curve{Hilbert, ZOrder} {
		e, err := NewEncoder(c, 1, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []uint32{0, 1, 2, 511, 1023} {
			k, err := e.Key([]uint32{v})
			if err != nil {
				t.Fatal(err)
			}
			if keyInt(k) != uint64(v) {
				t.Errorf("%s 1-d key(%d) = %d", c, v, keyInt(k))
			}
		}
	}
}

func TestWideKeysRoundTripAndKeepHilbertOrderBeyond64Bits(t *testing.T) {
	// 9 columns x 10 bits = 90 bits: more than a uint64.
	e, err := NewEncoder(Hilbert, 9, 10)
	if err != nil {
		t.Fatal(err)
	}
	if e.KeyLen() != 12 {
		t.Fatalf("key length %d, want 12", e.KeyLen())
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		c := make([]uint32, 9)
		for d := range c {
			c[d] = uint32(rng.IntN(1024))
		}
		k, err := e.Key(c)
		if err != nil {
			t.Fatal(err)
		}
		back, err := e.Decode(k)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(back) != fmt.Sprint(c) {
			t.Fatalf("round trip %v -> %v", c, back)
		}
	}
}

func TestEncoderRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		name       string
		curve      Curve
		dims, bits int
	}{
		{"unknown curve", "peano", 2, 4},
		{"no dimensions", Hilbert, 0, 4},
		{"too many dimensions", Hilbert, MaxDims + 1, 4},
		{"zero bits", ZOrder, 2, 0},
		{"too many bits", ZOrder, 2, 33},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewEncoder(tc.curve, tc.dims, tc.bits); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	e, err := NewEncoder(Hilbert, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Key([]uint32{1}); err == nil {
		t.Error("accepted 1 coordinate for 2 dimensions")
	}
	if _, err := e.Key([]uint32{16, 0}); err == nil {
		t.Error("accepted a coordinate wider than 4 bits")
	}
	if _, err := e.Decode([]byte{1, 2}); err == nil {
		t.Error("decoded a key of the wrong length")
	}
}

func TestForColumnsMatchesDeltaCurveChoice(t *testing.T) {
	for _, tc := range []struct {
		n     int
		curve Curve
		bits  int
	}{{1, ZOrder, 10}, {2, Hilbert, 10}, {4, Hilbert, 10}} {
		e, err := ForColumns(tc.n, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if e.Curve() != tc.curve || e.Bits() != tc.bits || e.Dims() != tc.n {
			t.Errorf("ForColumns(%d, 1000) = %s/%d bits/%d dims, want %s/%d bits", tc.n, e.Curve(), e.Bits(), e.Dims(), tc.curve, tc.bits)
		}
	}
}

// TestKey64IsTheKeysBytesAsANumber holds Key64 to AppendKey: the same key,
// its bytes read big-endian, for every curve, 1 to 6 dimensions and bit
// widths up to the 64 bits a number holds.
func TestKey64IsTheKeysBytesAsANumber(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []Curve{Hilbert, ZOrder} {
		for dims := 1; dims <= 6; dims++ {
			for bits := 1; bits*dims <= 64 && bits <= 32; bits += 3 {
				e, err := NewEncoder(c, dims, bits)
				if err != nil {
					t.Fatal(err)
				}
				coords := make([]uint32, dims)
				for range 200 {
					for i := range coords {
						coords[i] = uint32(rng.Uint64N(uint64(1) << bits))
					}
					key, err := e.Key(coords)
					if err != nil {
						t.Fatal(err)
					}
					var want uint64
					for _, b := range key {
						want = want<<8 | uint64(b)
					}
					got, err := e.Key64(coords)
					if err != nil || got != want {
						t.Fatalf("%s %d dims %d bits %v: Key64 = %x, %v; key %x", c, dims, bits, coords, got, err, key)
					}
				}
			}
		}
	}
	wide, _ := NewEncoder(Hilbert, 3, 30)
	if _, err := wide.Key64(make([]uint32, 3)); err == nil {
		t.Fatal("Key64 of a 12-byte key: no error")
	}
}

// TestKeys64IsKey64RowByRow holds the batch form to Key64: the same key for
// every row, for every curve, 1 to 5 dimensions (two take the spread-bits
// path) and bit widths up to 64 bits a key; a coordinate too wide fails.
func TestKeys64IsKey64RowByRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []Curve{Hilbert, ZOrder} {
		for dims := 1; dims <= 5; dims++ {
			for bits := 1; bits*dims <= 64 && bits <= 32; bits++ {
				e, err := NewEncoder(c, dims, bits)
				if err != nil {
					t.Fatal(err)
				}
				const n = 300
				cols := make([][]uint32, dims)
				for d := range cols {
					cols[d] = make([]uint32, n)
					for i := range cols[d] {
						cols[d][i] = uint32(rng.Uint64N(uint64(1) << bits))
					}
				}
				got := make([]uint64, n)
				if err := e.Keys64(cols, got); err != nil {
					t.Fatal(err)
				}
				row := make([]uint32, dims)
				for i := range n {
					for d := range row {
						row[d] = cols[d][i]
					}
					want, err := e.Key64(row)
					if err != nil || got[i] != want {
						t.Fatalf("%s %d dims %d bits %v: Keys64 = %x, Key64 = %x, %v", c, dims, bits, row, got[i], want, err)
					}
				}
				if bits < 32 {
					cols[dims-1][n/2] = 1 << bits
					if err := e.Keys64(cols, got); err == nil {
						t.Fatalf("%s %d dims %d bits: a coordinate of %d bits: no error", c, dims, bits, bits+1)
					}
				}
			}
		}
	}
}
