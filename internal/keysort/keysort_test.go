package keysort

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortEqualsAComparisonSort holds the parallel radix sort and
// merge to a plain sort by (key, ref), on inputs with many equal keys
// (whose refs must stay in order), with keys of one to eight bytes and
// one to five workers (odd numbers leave a share out of a merge round).
func TestSortEqualsAComparisonSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 255, 300, radixChunkMin*3 + 17} {
		for _, keyBytes := range []int{1, 3, 8} {
			for _, workers := range []int{1, 2, 3, 5} {
				t.Run(fmt.Sprintf("%d rows, %d key bytes, %d workers", n, keyBytes, workers), func(t *testing.T) {
					es := make([]Entry, n)
					distinct := uint64(1) << min(8*keyBytes, 12) // repeated keys
					for i := range es {
						k := rng.Uint64N(distinct)
						if keyBytes == 8 && i%2 == 0 {
							k |= rng.Uint64() &^ 0xfff // high bytes too
						} else if keyBytes < 8 {
							k &= 1<<(8*keyBytes) - 1
						}
						es[i] = Entry{Key: k, Ref: uint32(i)}
					}
					want := slices.Clone(es)
					slices.SortFunc(want, Compare)
					Sort(es, make([]Entry, n), keyBytes, workers)
					if !slices.Equal(es, want) {
						t.Fatal("the radix sort's order differs from the comparison sort's")
					}
				})
			}
		}
	}
}
