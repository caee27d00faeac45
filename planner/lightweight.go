package planner

import (
	"fmt"
	"sort"
	"strings"
)

// rankedRange is a candidate's (min, max) as ranks among the distinct
// min/max values of all candidates for one column.
type rankedRange struct {
	ok     bool
	lo, hi int
}

// measureColumn ranks every candidate's (min, max) for column c and returns
// the ranks and the column's average relative file range. Ranks make the
// measure independent of the type and scale of the values: it only needs an
// order. Files without usable stats (missing, of another kind, min > max)
// count as spanning the whole range.
func measureColumn(cands []*fileInfo, c column) ([]rankedRange, ColumnRange) {
	rs := make([]span, len(cands))
	var values []statValue
	kind := valueKind(-1)
	for i, f := range cands {
		lo, hi, ok := fileRange(f, c)
		if ok && kind == -1 {
			kind = lo.kind
		}
		if !ok || lo.kind != kind {
			continue
		}
		rs[i] = span{true, lo, hi}
		values = append(values, lo, hi)
	}
	sort.SliceStable(values, func(i, j int) bool { return compareStat(values[i], values[j]) < 0 })
	distinct := values[:0:0]
	for _, v := range values {
		if n := len(distinct); n == 0 || compareStat(distinct[n-1], v) != 0 {
			distinct = append(distinct, v)
		}
	}
	rank := func(v statValue) int {
		return sort.Search(len(distinct), func(i int) bool { return compareStat(distinct[i], v) >= 0 })
	}
	out := make([]rankedRange, len(cands))
	cr := ColumnRange{Column: c.name()}
	var sum float64
	for i, r := range rs {
		if !r.ok {
			cr.FilesWithoutStats++
			sum++
			continue
		}
		out[i] = rankedRange{ok: true, lo: rank(r.lo), hi: rank(r.hi)}
		if len(distinct) > 1 {
			sum += float64(out[i].hi-out[i].lo) / float64(len(distinct)-1)
		}
	}
	if len(cands) > 0 {
		cr.AvgRelativeRange = sum / float64(len(cands))
	}
	return out, cr
}

// lightweight packs small unclustered files in (min, max) order of one
// clustering column, so each output covers a narrow range of it; it never
// sorts rows and its outputs stay unclustered.
//
// When auto chose the tier, a small file at least half the target size is
// left alone (unless it has many deleted rows): every unclustered byte is
// rewritten again by the clustering run the threshold will trigger, so
// growing such a file now (rewriting it to append a few new batches, which
// the column order otherwise does on every run) is write amplification
// for nothing. Delta's auto compaction draws the same line (minFileSize =
// maxFileSize / 2). bench/clustering.sh at its defaults: auto rewrites 8%
// fewer bytes (254.9 -> 233.5 MiB) with the same pruning.
func (st *state) lightweight() error {
	var cands []*fileInfo
	for _, f := range st.files {
		if f.clustered {
			st.skip(SkipClustered, f)
			continue
		}
		if st.s.Strategy == StrategyAuto && !f.purge && !f.settling && f.small && 2*f.add.Size >= st.s.target {
			st.skip(SkipHalfTarget, f)
			continue
		}
		if st.compactionCandidate(f, SkipLightweightNoMore) {
			cands = append(cands, f)
		}
	}
	lw := &Lightweight{}
	st.plan.Lightweight = lw
	var ranks []rankedRange
	if want := st.s.LightweightColumn; want != nil {
		idx := -1
		for i, c := range st.cols {
			if equalFoldPath(c.Logical, want) || equalPath(c.Physical, want) {
				idx = i
				break
			}
		}
		if idx < 0 {
			return fmt.Errorf("lightweight column %s is not a clustering column (%s)", quotePath(want), strings.Join(st.plan.ClusteringColumns, ", "))
		}
		ranks, _ = measureColumn(cands, st.cols[idx])
		lw.Column, lw.Chosen = st.cols[idx].name(), "policy"
	} else {
		best := -1
		var bestRanks []rankedRange
		for i, c := range st.cols {
			r, cr := measureColumn(cands, c)
			lw.Ranges = append(lw.Ranges, cr)
			if cr.AvgRelativeRange <= st.s.maxRelRange && (best < 0 || cr.AvgRelativeRange < lw.Ranges[best].AvgRelativeRange) {
				best, bestRanks = i, r
			}
		}
		if best >= 0 {
			ranks = bestRanks
			lw.Column, lw.Chosen = st.cols[best].name(), "auto"
		} else {
			lw.Chosen = "size"
		}
	}
	pos := make(map[*fileInfo]rankedRange, len(cands))
	for i, f := range cands {
		if ranks != nil {
			pos[f] = ranks[i]
		}
	}
	for _, part := range byPartition(cands) {
		sort.SliceStable(part, func(i, j int) bool {
			a, b := part[i], part[j]
			ra, rb := pos[a], pos[b]
			if ra.ok != rb.ok {
				return ra.ok // files without stats go last
			}
			if ra.ok {
				if ra.lo != rb.lo {
					return ra.lo < rb.lo
				}
				if ra.hi != rb.hi {
					return ra.hi < rb.hi
				}
			} else if a.add.Size != b.add.Size {
				return a.add.Size < b.add.Size
			}
			return a.add.Path < b.add.Path
		})
		st.compactionBins(StrategyLightweight, part)
	}
	return nil
}

func equalFoldPath(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !strings.EqualFold(a[i], b[i]) {
			return false
		}
	}
	return true
}

func equalPath(a, b []string) bool { return sameNames(a, b) }
