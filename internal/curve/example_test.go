package curve_test

import (
	"bytes"
	"cmp"
	"fmt"
	"sort"

	"github.com/compactord/compactord/internal/curve"
)

// Example shows how a writer orders rows of a zcube job: sample each
// clustering column, bucketize it, build one key per row, sort by key.
func Example() {
	type row struct{ a, b int64 }
	var rows []row
	for i := int64(0); i < 16; i++ {
		rows = append(rows, row{a: i % 4, b: i / 4})
	}
	cols := []func(row) int64{func(r row) int64 { return r.a }, func(r row) int64 { return r.b }}
	buckets := make([]*curve.Bucketizer[int64], len(cols))
	for c, get := range cols {
		sample := curve.NewReservoir[int64](1000, uint64(c))
		for _, r := range rows {
			sample.Add(get(r))
		}
		buckets[c] = curve.NewBucketizer(sample.Sample(), 4, cmp.Compare[int64])
	}
	enc, err := curve.ForColumns(len(cols), 4)
	if err != nil {
		panic(err)
	}
	keys := make([][]byte, len(rows))
	for i, r := range rows {
		coords := make([]uint32, len(cols))
		for c, get := range cols {
			coords[c] = buckets[c].Bucket(get(r))
		}
		if keys[i], err = enc.Key(coords); err != nil {
			panic(err)
		}
	}
	idx := make([]int, len(rows))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return bytes.Compare(keys[idx[i]], keys[idx[j]]) < 0 })
	for _, i := range idx {
		fmt.Print(rows[i], " ")
	}
	fmt.Println()
	// Output:
	// {0 0} {1 0} {1 1} {0 1} {0 2} {0 3} {1 3} {1 2} {2 2} {2 3} {3 3} {3 2} {3 1} {2 1} {2 0} {3 0}
}
