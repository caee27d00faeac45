package clusteradvise

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/compactord/compactord/delta/predicate"
	"github.com/compactord/compactord/internal/curve"
)

// Sample is a bounded sample of a table's rows: Values[name][i] is column
// name's value in sampled row i (nil: null). Every column holds Rows values.
type Sample struct {
	Rows   int
	Values map[string][]*predicate.Value
}

// maxBuckets is the number of range buckets per key column, as liquid
// clustering sizes its range ids (curve.BitsFor(1000) = 10 bits).
const maxBuckets = 1000

// groupStats are the statistics of one simulated file: per column (by
// physical path) min, max and null count over its rows.
type groupStats struct {
	rows int64
	cols map[string]predicate.ColumnStats
}

var _ predicate.FileStats = (*groupStats)(nil)

// NumRecords implements predicate.FileStats.
func (g *groupStats) NumRecords() (int64, bool) { return g.rows, true }

// Column implements predicate.FileStats.
func (g *groupStats) Column(col predicate.Column) (predicate.ColumnStats, error) {
	return g.cols[pathKey(col.Path)], nil
}

func pathKey(p []string) string { return strings.Join(p, "\x00") }

// layoutOn orders the sample's rows by the Hilbert key on key (Z-order,
// the bucket id itself, for one column), as liquid clustering writes them,
// and cuts them into nFiles files of equal row counts; it returns the
// files' statistics over cols. An empty key keeps the sample's order.
func layoutOn(s *Sample, key []string, cols map[string]predicate.Column, nFiles int) ([]*groupStats, error) {
	n := s.Rows
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	if len(key) > 0 {
		keys, err := curveKeys(s, key)
		if err != nil {
			return nil, err
		}
		sort.SliceStable(order, func(i, j int) bool {
			return bytes.Compare(keys[order[i]], keys[order[j]]) < 0
		})
	}
	if nFiles < 1 {
		nFiles = 1
	}
	if nFiles > n && n > 0 {
		nFiles = n
	}
	out := make([]*groupStats, 0, nFiles)
	for g := range nFiles {
		lo, hi := g*n/nFiles, (g+1)*n/nFiles
		gs := &groupStats{rows: int64(hi - lo), cols: make(map[string]predicate.ColumnStats, len(cols))}
		for name, col := range cols {
			vals := s.Values[name]
			var minV, maxV *predicate.Value
			var nulls int64
			for _, idx := range order[lo:hi] {
				v := vals[idx]
				if v == nil {
					nulls++
					continue
				}
				if minV == nil || less(*v, *minV) {
					minV = v
				}
				if maxV == nil || less(*maxV, *v) {
					maxV = v
				}
			}
			gs.cols[pathKey(col.Path)] = predicate.ColumnStats{Min: minV, Max: maxV, NullCount: &nulls}
		}
		out = append(out, gs)
	}
	return out, nil
}

func less(a, b predicate.Value) bool {
	c, err := predicate.Compare(a, b)
	return err == nil && c < 0
}

// curveKeys computes every sampled row's curve key on key.
func curveKeys(s *Sample, key []string) ([][]byte, error) {
	buckets := make([]*curve.Bucketizer[predicate.Value], len(key))
	nb := 1
	for d, name := range key {
		vals, ok := s.Values[name]
		if !ok {
			return nil, fmt.Errorf("column %s: not in the sample", name)
		}
		nonNull := make([]predicate.Value, 0, len(vals))
		for _, v := range vals {
			if v != nil {
				nonNull = append(nonNull, *v)
			}
		}
		buckets[d] = curve.NewBucketizer(nonNull, maxBuckets, func(a, b predicate.Value) int {
			c, _ := predicate.Compare(a, b)
			return c
		})
		nb = max(nb, buckets[d].NumBuckets())
	}
	enc, err := curve.ForColumns(len(key), nb)
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", strings.Join(key, ", "), err)
	}
	keys := make([][]byte, s.Rows)
	coords := make([]uint32, len(key))
	for i := range keys {
		for d, name := range key {
			v := s.Values[name][i]
			if v == nil {
				coords[d] = curve.NullBucket
			} else {
				coords[d] = buckets[d].Bucket(*v)
			}
		}
		k, err := enc.Key(coords)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", strings.Join(key, ", "), err)
		}
		keys[i] = k
	}
	return keys, nil
}

// Layout lays the sample's rows out on key as Advise's estimator does
// (Hilbert order, nFiles files of equal row counts) and returns the files'
// statistics over cols. A benchmark passes all of a table's rows to
// measure what the estimate stands for.
func Layout(s *Sample, key []string, cols map[string]predicate.Column, nFiles int) ([]predicate.FileStats, error) {
	groups, err := layoutOn(s, key, cols, nFiles)
	if err != nil {
		return nil, err
	}
	out := make([]predicate.FileStats, len(groups))
	for i, g := range groups {
		out[i] = g
	}
	return out, nil
}
