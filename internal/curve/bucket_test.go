package curve

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestBucketsFollowValueOrderWithEvenQuantiles(t *testing.T) {
	sample := make([]int, 1000)
	for i := range sample {
		sample[i] = (i * 7919) % 1000 // a permutation of 0..999
	}
	b := NewBucketizer(sample, 10, cmp.Compare[int])
	if b.NumBuckets() != 10 {
		t.Fatalf("%d buckets, want 10", b.NumBuckets())
	}
	counts := make([]int, b.NumBuckets())
	prev := uint32(0)
	for v := 0; v < 1000; v++ {
		id := b.Bucket(v)
		if id < prev {
			t.Fatalf("bucket(%d) = %d after bucket %d: not monotone", v, id, prev)
		}
		prev = id
		counts[id]++
	}
	for i, c := range counts {
		if c != 100 {
			t.Errorf("bucket %d holds %d values, want 100", i, c)
		}
	}
	if b.Bucket(-5) != 0 || b.Bucket(5000) != 9 {
		t.Errorf("out-of-sample values: bucket(-5)=%d bucket(5000)=%d", b.Bucket(-5), b.Bucket(5000))
	}
}

func TestBucketsCollapseRepeatedValues(t *testing.T) {
	sample := []string{"a", "a", "a", "a", "a", "a", "a", "a", "b", "c"}
	b := NewBucketizer(sample, 5, strings.Compare)
	if b.Bucket("a") == b.Bucket("c") {
		t.Fatal("a and c share a bucket")
	}
	bounds := b.Bounds()
	for i := 1; i < len(bounds); i++ {
		if bounds[i-1] >= bounds[i] {
			t.Fatalf("bounds not strictly increasing: %v", bounds)
		}
	}
}

func TestBucketsOrderInstantsNotStrings(t *testing.T) {
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var sample []time.Time
	for i := 0; i < 100; i++ {
		sample = append(sample, base.Add(time.Duration(i)*time.Hour))
	}
	b := NewBucketizer(sample, 4, func(a, b time.Time) int { return a.Compare(b) })
	// The same instant in another zone lands in the same bucket.
	v := base.Add(50 * time.Hour)
	if b.Bucket(v) != b.Bucket(v.In(time.FixedZone("x", -8*3600))) {
		t.Fatal("zone changed the bucket")
	}
	if b.Bucket(base) != 0 || b.Bucket(base.Add(99*time.Hour)) != 3 {
		t.Fatalf("ends in buckets %d and %d", b.Bucket(base), b.Bucket(base.Add(99*time.Hour)))
	}
}

func TestEmptySampleIsOneBucket(t *testing.T) {
	b := NewBucketizer[int](nil, 1000, cmp.Compare[int])
	if b.NumBuckets() != 1 || b.Bucket(42) != 0 {
		t.Fatalf("empty sample: %d buckets, bucket(42)=%d", b.NumBuckets(), b.Bucket(42))
	}
}

func TestReservoirIsBoundedUniformAndReproducible(t *testing.T) {
	run := func() []int {
		r := NewReservoir[int](100, 7)
		for i := 0; i < 100000; i++ {
			r.Add(i)
		}
		if r.Seen() != 100000 || len(r.Sample()) != 100 {
			t.Fatalf("seen %d, kept %d", r.Seen(), len(r.Sample()))
		}
		return append([]int(nil), r.Sample()...)
	}
	a, b := run(), run()
	late := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("same seed, different samples")
		}
		if a[i] >= 50000 {
			late++
		}
	}
	// A uniform sample holds about half its values from the second half;
	// Algorithm R keeping only the first 100 would hold none.
	if late < 30 || late > 70 {
		t.Fatalf("%d of 100 sampled values from the second half", late)
	}
}

// TestUpperBoundIsBucket holds UpperBound to a Bucketizer's Bucket over the
// same bounds, for integers and floats (infinities searched too), at values
// on, between and beyond the bounds, for 0 to 40 bounds; NaN is above every
// bound.
func TestUpperBoundIsBucket(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for n := 0; n <= 40; n++ {
		ints := make([]int64, 5*n+1)
		floats := make([]float64, len(ints))
		for i := range ints {
			ints[i] = rng.Int64N(100) - 50
			floats[i] = float64(ints[i]) / 4
		}
		bi := NewBucketizer(ints, n+1, cmp.Compare[int64])
		bf := NewBucketizer(floats, n+1, cmp.Compare[float64]) // no NaN: < and > order them the same
		for v := int64(-60); v <= 60; v++ {
			if got, want := UpperBound(bi.Bounds(), v), bi.Bucket(v); got != want {
				t.Fatalf("%d bounds %v: UpperBound(%d) = %d, Bucket = %d", n, bi.Bounds(), v, got, want)
			}
		}
		for _, v := range []float64{math.Inf(-1), math.Inf(1), -12.5, -0.125, 0, 3.25, 12.625} {
			if got, want := UpperBound(bf.Bounds(), v), bf.Bucket(v); got != want {
				t.Fatalf("%d bounds %v: UpperBound(%v) = %d, Bucket = %d", n, bf.Bounds(), v, got, want)
			}
		}
		if got := UpperBound(bf.Bounds(), math.NaN()); got != uint32(len(bf.Bounds())) {
			t.Fatalf("%d bounds: UpperBound(NaN) = %d, want above every bound", len(bf.Bounds()), got)
		}
	}
}

// TestReservoirOfferSetIsAlgorithmR holds Offer and Set, used by callers
// that build a value only when it is taken, to a plain Algorithm R over the
// same seeded generator: the same sample, value for value, so that the
// buckets drawn from it are the same whichever way the values came.
func TestReservoirOfferSetIsAlgorithmR(t *testing.T) {
	for _, n := range []int{0, 5, 100, 10000} {
		const capacity, seed = 100, 42
		r := NewReservoir[int](capacity, seed)
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		var want []int
		for i := range n {
			if slot, ok := r.Offer(); ok {
				r.Set(slot, i)
			}
			if len(want) < capacity {
				want = append(want, i)
			} else if j := rng.Int64N(int64(i + 1)); j < capacity {
				want[j] = i
			}
		}
		if !slices.Equal(r.Sample(), want) || r.Seen() != int64(n) {
			t.Fatalf("%d values: sample %v (seen %d), want %v", n, r.Sample(), r.Seen(), want)
		}
	}
}
