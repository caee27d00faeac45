package curve

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestBoundIndexIsUpperBound(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	cases := []struct {
		name   string
		bounds []int64
		value  func() int64
	}{
		{"empty", nil, func() int64 { return r.Int64() }},
		{"one", []int64{5}, func() int64 { return r.Int64N(11) }},
		{"dense", sortedInts(1000, func() int64 { return r.Int64N(2000) }), func() int64 { return r.Int64N(2200) - 100 }},
		{"duplicates", sortedInts(1000, func() int64 { return r.Int64N(20) }), func() int64 { return r.Int64N(24) - 2 }},
		{"wide", sortedInts(1000, func() int64 { return int64(r.Uint64()) }), func() int64 { return int64(r.Uint64()) }},
		{"extremes", []int64{math.MinInt64, -1, 0, math.MaxInt64}, func() int64 {
			return []int64{math.MinInt64, math.MinInt64 + 1, -2, -1, 0, 1, math.MaxInt64 - 1, math.MaxInt64}[r.IntN(8)]
		}},
		{"skewed", sortedInts(1000, func() int64 { return int64(math.Exp(r.Float64() * 40)) }), func() int64 { return int64(math.Exp(r.Float64() * 41)) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := NewBoundIndex(c.bounds)
			for _, b := range c.bounds { // every bound and its neighbours
				for _, v := range []int64{b - 1, b, b + 1} {
					if got, want := x.UpperBound(v), UpperBound(c.bounds, v); got != want {
						t.Fatalf("UpperBound(%d) = %d, want %d", v, got, want)
					}
				}
			}
			for range 20000 {
				v := c.value()
				if got, want := x.UpperBound(v), UpperBound(c.bounds, v); got != want {
					t.Fatalf("UpperBound(%d) = %d, want %d", v, got, want)
				}
			}
		})
	}
}

// sortedInts is n values of f, ascending.
func sortedInts(n int, f func() int64) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = f()
	}
	slices.Sort(s)
	return s
}

func TestFloatKeyKeepsTheOrderOfFloats(t *testing.T) {
	fs := []float64{math.Inf(-1), -math.MaxFloat64, -1e300, -2.5, -1, -math.SmallestNonzeroFloat64, math.Copysign(0, -1), 0,
		math.SmallestNonzeroFloat64, 1e-300, 1, 2.5, 1e300, math.MaxFloat64, math.Inf(1)}
	for i, a := range fs {
		for j, b := range fs {
			if (a < b) != (FloatKey(a) < FloatKey(b)) || (a == b) != (FloatKey(a) == FloatKey(b)) {
				t.Errorf("%g (#%d) and %g (#%d): keys %d and %d out of the floats' order", a, i, b, j, FloatKey(a), FloatKey(b))
			}
		}
	}
}

func BenchmarkBoundIndex(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	bounds := sortedInts(1000, func() int64 { return r.Int64N(1 << 40) })
	vals := make([]int64, 1<<16)
	for i := range vals {
		vals[i] = r.Int64N(1 << 40)
	}
	dst := make([]uint32, len(vals))
	x := NewBoundIndex(bounds)
	b.Run("binary-search", func(b *testing.B) {
		for range b.N {
			for j, v := range vals {
				dst[j] = UpperBound(bounds, v)
			}
		}
	})
	b.Run("index", func(b *testing.B) {
		for range b.N {
			for j, v := range vals {
				dst[j] = x.UpperBound(v)
			}
		}
	})
}
