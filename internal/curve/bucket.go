package curve

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"sort"
)

// NullBucket is the bucket id for null values: nulls sort first, sharing
// bucket 0 with the smallest values (Delta's range ids treat nulls as 0).
const NullBucket uint32 = 0

// Bucketizer maps values of one column to range bucket ids in
// [0, NumBuckets()), in value order, using boundaries drawn from a sample.
// T is any type ordered by the compare function (numbers, strings, instants,
// parquet values...). It is immutable after construction.
type Bucketizer[T any] struct {
	bounds []T
	cmp    func(a, b T) int
}

// NewBucketizer draws up to maxBuckets-1 boundaries at even quantiles of
// sample (which it does not modify; nulls must be left out of it). Equal
// quantiles collapse, so heavily repeated values get one bucket. An empty
// sample yields a single bucket.
func NewBucketizer[T any](sample []T, maxBuckets int, cmp func(a, b T) int) *Bucketizer[T] {
	b := &Bucketizer[T]{cmp: cmp}
	if len(sample) == 0 || maxBuckets <= 1 {
		return b
	}
	s := slices.Clone(sample)
	slices.SortStableFunc(s, cmp)
	k := maxBuckets
	if k > len(s) {
		k = len(s)
	}
	for i := 1; i < k; i++ {
		v := s[i*len(s)/k]
		if n := len(b.bounds); n > 0 && cmp(b.bounds[n-1], v) >= 0 {
			continue
		}
		b.bounds = append(b.bounds, v)
	}
	return b
}

// NumBuckets returns the number of distinct bucket ids.
func (b *Bucketizer[T]) NumBuckets() int { return len(b.bounds) + 1 }

// Bounds returns the boundaries: bucket i holds values v with
// bounds[i-1] <= v < bounds[i].
func (b *Bucketizer[T]) Bounds() []T { return slices.Clone(b.bounds) }

// Bucket returns the bucket id of a non-null value.
func (b *Bucketizer[T]) Bucket(v T) uint32 {
	return uint32(sort.Search(len(b.bounds), func(i int) bool { return b.cmp(b.bounds[i], v) > 0 }))
}

// Reservoir keeps a uniform sample of at most Cap values from a stream
// (Algorithm R), with a seeded generator so that a rewrite's sample, and so
// its boundaries, are reproducible.
type Reservoir[T any] struct {
	capacity int
	seen     int64
	items    []T
	rng      *rand.Rand
}

// NewReservoir returns an empty reservoir of the given capacity.
func NewReservoir[T any](capacity int, seed uint64) *Reservoir[T] {
	if capacity < 1 {
		capacity = 1
	}
	return &Reservoir[T]{capacity: capacity, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Add offers one value to the sample.
func (r *Reservoir[T]) Add(v T) {
	if slot, ok := r.Offer(); ok {
		r.Set(slot, v)
	}
}

// Offer is Add's draw without the value: it counts one value offered and
// reports whether the sample takes it, and in which slot (Set stores it),
// for a caller that builds the value only when it is taken. Offer then Set
// draws the sample Add does.
func (r *Reservoir[T]) Offer() (slot int, ok bool) {
	r.seen++
	if len(r.items) < r.capacity {
		return len(r.items), true
	}
	if j := r.rng.Int64N(r.seen); j < int64(r.capacity) {
		return int(j), true
	}
	return 0, false
}

// Set stores v in a slot Offer just returned.
func (r *Reservoir[T]) Set(slot int, v T) {
	if slot == len(r.items) {
		r.items = append(r.items, v)
		return
	}
	r.items[slot] = v
}

// Seen returns how many values were offered.
func (r *Reservoir[T]) Seen() int64 { return r.seen }

// Sample returns the sampled values (shared with the reservoir).
func (r *Reservoir[T]) Sample() []T { return r.items }

// UpperBound is the number of bounds at or below v, for ascending bounds
// of an ordered type without NaNs: what Bucket returns for a Bucketizer of
// these bounds compared by cmp.Compare (or, for floats, by < and >), found
// without a comparison function call per step. A NaN v is above every
// bound.
func UpperBound[T cmp.Ordered](bounds []T, v T) uint32 {
	n := len(bounds)
	if n == 0 {
		return 0
	}
	base := 0
	for n > 1 {
		half := n >> 1
		if !(bounds[base+half] > v) {
			base += half
		}
		n -= half
	}
	if !(bounds[base] > v) {
		base++
	}
	return uint32(base)
}
