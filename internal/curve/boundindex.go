package curve

import (
	"math"
	"math/bits"
)

// boundIndexSlots is the number of slots a BoundIndex cuts its bounds'
// range into: with about as many slots as bounds most searches end after a
// step or two instead of the ten of a binary search over a thousand bounds.
const boundIndexSlots = 4096

// BoundIndex answers UpperBound over ascending int64 bounds through a table
// of slots over the bounds' range: a value's slot gives the few bounds that
// can lie at or below it beyond those before the slot, and a short binary
// search among those finishes. A binary search over a thousand bounds is
// ten dependent loads per value; the clustering columns' keys search one
// per row, so this is most of their cost.
type BoundIndex struct {
	bounds []int64
	lo     int64
	shift  uint
	// first[t] is the number of bounds below slot t's first value; slot t
	// holds the values lo + t<<shift up to the next slot's first.
	first []uint32
}

// NewBoundIndex indexes ascending bounds (kept, not copied).
func NewBoundIndex(bounds []int64) *BoundIndex {
	x := &BoundIndex{bounds: bounds}
	if len(bounds) == 0 {
		return x
	}
	x.lo = bounds[0]
	span := uint64(bounds[len(bounds)-1]) - uint64(x.lo) // wraps into the true distance
	// The smallest shift that puts the whole span in the table.
	if w := bits.Len64(span); w > bits.Len64(boundIndexSlots-1) {
		x.shift = uint(w - bits.Len64(boundIndexSlots-1))
	}
	slots := int(span>>x.shift) + 1
	x.first = make([]uint32, slots+1)
	b := 0
	for t := 1; t < slots; t++ {
		start := uint64(t) << x.shift // offset of slot t's first value from lo
		for b < len(bounds) && uint64(bounds[b])-uint64(x.lo) < start {
			b++
		}
		x.first[t] = uint32(b)
	}
	// Past the last slot (whose end may be 1<<64 from lo): every bound.
	x.first[slots] = uint32(len(bounds))
	return x
}

// Len is the number of bounds.
func (x *BoundIndex) Len() int { return len(x.bounds) }

// UpperBound is the number of bounds at or below v: UpperBound(bounds, v).
func (x *BoundIndex) UpperBound(v int64) uint32 {
	n := len(x.bounds)
	if n == 0 || v < x.lo {
		return 0
	}
	t := (uint64(v) - uint64(x.lo)) >> x.shift
	if t >= uint64(len(x.first)-1) {
		return uint32(n)
	}
	a, b := x.first[t], x.first[t+1]
	// Bounds a.. are at or above the slot's first value, those from b on
	// above its last: the answer is a plus those of bounds[a:b] at or
	// below v.
	return a + UpperBound(x.bounds[a:b], v)
}

// FloatKey maps a float64 that is not a NaN to an int64 whose order is the
// floats' order by < (minus zero and zero are one key), so float bounds can
// be searched through a BoundIndex. A NaN has no place in that order:
// UpperBound counts every bound for it, so callers test for NaNs first.
func FloatKey(f float64) int64 {
	if f == 0 {
		f = 0 // -0 is 0
	}
	k := int64(math.Float64bits(f))
	return k ^ (k>>63)&math.MaxInt64
}
