package keysort

import (
	"cmp"
	"runtime"
	"slices"
	"sync"
)

// The column path of a sorted rewrite sorts one fixed-width entry per live
// row: the row's curve key (at most 8 bytes, big-endian, so numeric order
// is the key's byte order) and its ordinal, the row's position in read
// order (sources in job order, physical rows ascending within a source).
// Ordering by (key, ordinal) is the row path's (key, source, physical row)
// order, since the ordinal grows with (source, physical row).

// Entry is one live row in the sort: its key, its ordinal and the
// index of its source in the job's sources (held in what would otherwise
// be padding, so the origin map needs no search).
type Entry struct {
	// Key is the row's curve key.
	Key uint64
	// Ref is the row's ordinal in read order.
	Ref uint32
	// Src is the index of the row's source in the job's sources.
	Src uint32
}

// Compare orders entries by key, then ordinal.
func Compare(a, b Entry) int {
	if c := cmp.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	return cmp.Compare(a.Ref, b.Ref)
}

// radixChunkMin is the smallest share of entries a sort worker takes.
const radixChunkMin = 1 << 16

// Sort sorts es by (key, ref) using up to workers goroutines: each
// sorts a contiguous share with an LSD radix sort on the keyBytes low bytes
// of the key (stable, so equal keys keep their ref order, which the shares
// start in), then the shares are merged pairwise, in parallel. scratch, of
// len(es), is working memory.
func Sort(es, scratch []Entry, keyBytes, workers int) {
	n := len(es)
	if n < 2 {
		return
	}
	workers = max(1, min(workers, n/radixChunkMin))
	bounds := make([]int, workers+1)
	for i := range bounds {
		bounds[i] = i * n / workers
	}
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			lo, hi := bounds[i], bounds[i+1]
			radixSort(es[lo:hi], scratch[lo:hi], keyBytes)
		})
	}
	wg.Wait()
	// Merge neighbouring shares until one is left; src and dst alternate.
	src, dst := es, scratch
	for len(bounds) > 2 {
		next := []int{0}
		var wg sync.WaitGroup
		// Each merge of the round is cut into pieces, so that the
		// workers stay busy as the merges get fewer.
		pieces := max(1, workers/((len(bounds)-1)/2))
		for i := 0; i+1 < len(bounds); i += 2 {
			lo := bounds[i]
			if i+2 >= len(bounds) {
				// An odd share out: copied over as it is.
				hi := bounds[i+1]
				wg.Go(func() { copy(dst[lo:hi], src[lo:hi]) })
				next = append(next, hi)
				continue
			}
			mid, hi := bounds[i+1], bounds[i+2]
			a, b := src[lo:mid], src[mid:hi]
			for p := range pieces {
				k0, k1 := p*(hi-lo)/pieces, (p+1)*(hi-lo)/pieces
				wg.Go(func() {
					i0, i1 := coRank(k0, a, b), coRank(k1, a, b)
					mergeEntries(dst[lo+k0:lo+k1], a[i0:i1], b[k0-i0:k1-i1])
				})
			}
			next = append(next, hi)
		}
		wg.Wait()
		bounds = next
		src, dst = dst, src
	}
	if &src[0] != &es[0] {
		copy(es, src)
	}
}

// mergeEntries merges the sorted a and b into dst (len(a)+len(b)).
func mergeEntries(dst, a, b []Entry) {
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if Compare(b[j], a[i]) < 0 {
			dst[k] = b[j]
			j++
		} else {
			dst[k] = a[i]
			i++
		}
		k++
	}
	k += copy(dst[k:], a[i:])
	copy(dst[k:], b[j:])
}

// coRank is how many of the first k entries of the merge of the sorted a
// and b come from a (a's entries first among equal ones).
func coRank(k int, a, b []Entry) int {
	lo, hi := max(0, k-len(b)), min(k, len(a))
	for lo < hi {
		i := int(uint(lo+hi) >> 1)
		if j := k - i; j > 0 && Compare(a[i], b[j-1]) <= 0 {
			lo = i + 1 // a[i] comes before b[j-1], which is among the first k
		} else {
			hi = i
		}
	}
	return lo
}

// radixSort sorts es stably by the low keyBytes bytes of the key (the rest
// must be zero), one byte per pass, skipping bytes every key shares.
func radixSort(es, scratch []Entry, keyBytes int) {
	if len(es) < 2 {
		return
	}
	if len(es) < 256 {
		slices.SortStableFunc(es, func(a, b Entry) int { return cmp.Compare(a.Key, b.Key) })
		return
	}
	src, dst := es, scratch[:len(es)]
	var counts [256]int
	for b := range keyBytes {
		shift := uint(8 * b)
		clear(counts[:])
		for _, e := range src {
			counts[byte(e.Key>>shift)]++
		}
		if counts[byte(src[0].Key>>shift)] == len(src) {
			continue // every key has this byte: the pass changes nothing
		}
		pos := 0
		for d := range counts {
			c := counts[d]
			counts[d] = pos
			pos += c
		}
		for _, e := range src {
			d := byte(e.Key >> shift)
			dst[counts[d]] = e
			counts[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &es[0] {
		copy(es, src)
	}
}

// Ranges runs fn over [0, n) split into up to GOMAXPROCS ranges of
// at least minRange, and returns the first error.
func Ranges(n, minRange int, fn func(lo, hi int) error) error {
	w := max(1, min(runtime.GOMAXPROCS(0), n/max(1, minRange)))
	errs := make([]error, w)
	var wg sync.WaitGroup
	for i := range w {
		wg.Go(func() { errs[i] = fn(i*n/w, (i+1)*n/w) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
