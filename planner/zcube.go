package planner

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// cubeUnit is what zcube bins never split: one unclustered file, or all
// candidate files of one Z-cube.
type cubeUnit struct {
	id    string // "" for an unclustered file
	files []*fileInfo
	size  int64
}

// zcube clusters unclustered files and partial Z-cubes (every file with
// Full) along the curve, one new Z-cube per job.
func (st *state) zcube() {
	names := make([]string, len(st.cols))
	physical := make([][]string, len(st.cols))
	for i, c := range st.cols {
		names[i], physical[i] = c.name(), c.Physical
	}
	full := st.s.Full
	maxBin := st.s.minCube + st.s.minCube/2 // Delta's targetCubeSize: 1.5 x minCubeSize
	for _, part := range byPartition(st.files) {
		var spans *columnSpans // built for the partition's first job only
		var uncl []*fileInfo
		cubes := map[string]*cubeUnit{}
		for _, f := range part {
			if !full {
				if f.provider != "" && f.provider != ClusteringProviderLiquid {
					st.skip(SkipOtherProvider, f)
					continue
				}
				if f.zcubeID != "" && !sameNames(f.zorderBy, names) {
					st.skip(SkipOtherColumns, f)
					continue
				}
			}
			if f.settling && !f.clustered {
				st.skip(SkipSettling, f)
				continue
			}
			id := f.zcubeID
			if id == "" && f.provider != "" {
				id = "file:" + f.add.Path // clustered on write, no z-cube of its own
			}
			if id == "" {
				uncl = append(uncl, f)
				continue
			}
			u := cubes[id]
			if u == nil {
				u = &cubeUnit{id: id}
				cubes[id] = u
			}
			u.files = append(u.files, f)
			u.size += f.logical
		}
		ids := make([]string, 0, len(cubes))
		for id := range cubes {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		var units []*cubeUnit
		for _, f := range uncl {
			units = append(units, &cubeUnit{files: []*fileInfo{f}, size: f.add.Size})
		}
		var partials []*cubeUnit
		for _, id := range ids {
			u := cubes[id]
			if !full && u.size >= st.s.minCube {
				for _, f := range u.files {
					st.skip(SkipLargeZCube, f)
				}
				continue
			}
			partials = append(partials, u)
		}
		var groups [][]*cubeUnit
		// Merges are bounded while new data arrives; a partition without
		// unclustered data is quiet, and one merge of its partial cubes
		// settles it (as Delta merges them on every run).
		if !full && st.s.cubeMinCubes > 1 && len(units) > 0 {
			groups = st.boundedMerges(units, partials, len(part))
		} else {
			groups = [][]*cubeUnit{append(units, partials...)}
		}
		var bins [][]*cubeUnit
		for _, g := range groups {
			bins = append(bins, packUnits(g, maxBin)...)
		}
		for _, bin := range bins {
			var fs []*fileInfo
			nUncl, nCubes := 0, 0
			for _, u := range bin {
				fs = append(fs, u.files...)
				if u.id == "" {
					nUncl++
				} else {
					nCubes++
				}
			}
			if !full && nUncl == 0 && nCubes <= 1 {
				for _, f := range fs {
					st.skip(SkipSingleZCube, f)
				}
				continue
			}
			reason := fmt.Sprintf("cluster %d unclustered files and %d partial z-cubes", nUncl, nCubes)
			if full {
				reason = fmt.Sprintf("full re-clustering of %d files", len(fs))
			}
			st.plan.Considered.CandidateFiles += len(fs)
			for _, f := range fs {
				st.plan.Considered.CandidateBytes += f.add.Size
			}
			j := st.newJob(StrategyZCube, reason, fs)
			curve := CurveHilbert
			if len(physical) == 1 {
				curve = CurveZOrder
			}
			if spans == nil {
				cs := st.columnSpans(part)
				spans = &cs
			}
			j.Sort = &SortSpec{Columns: physical, Curve: curve, Buckets: spans.buckets(fs, st.s.target, full)}
			j.ClusteringProvider = ClusteringProviderLiquid
			by, _ := json.Marshal(names) // a []string always marshals
			h := sha256.New()
			fmt.Fprintf(h, "zcube-id\x00%d\x00", st.snap.Version)
			for _, f := range fs {
				h.Write([]byte(f.add.FileKey()))
				h.Write([]byte{0})
			}
			j.Tags = map[string]string{TagZCubeID: uuidFrom(h.Sum(nil)), TagZCubeZOrderBy: string(by)}
			st.jobs = append(st.jobs, j)
		}
	}
}

// columnSpans holds one partition's files and their (min, max) per
// clustering column, to size a job's range buckets.
type columnSpans struct {
	cols   []column
	files  []*fileInfo
	index  map[*fileInfo]int // position in files
	ranges [][]span          // [column][file]
	spread []float64         // [column]: the files' average relative range
}

// span is a file's (min, max) of one column; ok is false when its stats
// give none.
type span struct {
	ok     bool
	lo, hi statValue
}

func (st *state) columnSpans(part []*fileInfo) columnSpans {
	cs := columnSpans{cols: st.cols, files: part, index: make(map[*fileInfo]int, len(part)), ranges: make([][]span, len(st.cols))}
	for k, f := range part {
		cs.index[f] = k
	}
	cs.spread = make([]float64, len(st.cols))
	for i, c := range st.cols {
		_, cr := measureColumn(part, c)
		cs.spread[i] = cr.AvgRelativeRange
		cs.ranges[i] = make([]span, len(part))
		for k, f := range part {
			lo, hi, ok := fileRange(f, c)
			cs.ranges[i][k] = span{ok, lo, hi}
		}
	}
	return cs
}

// buckets returns the range buckets per clustering column for a job over
// fs. A column's share is the part of the partition's data (logical bytes)
// in files whose [min, max] overlaps the job's [min, max] of the column
// (files without usable stats count as overlapping); the column gets
// MaxRangeBuckets x share buckets, rounded up, at least 1. A job covering
// the whole partition (FULL, or a column every file spans) gets
// MaxRangeBuckets, as Delta does. An incremental job over the newest slice
// of a time-ordered stream holds only a small share of the table's time
// range, so splitting it finely by time buys little for predicates that
// select a small share of the table; its curve resolution goes to the
// other columns instead. A job source without usable stats for a column
// gives that column MaxRangeBuckets.
//
// The curve over buckets in proportion to the shares cuts the job's
// outputs (its bytes / target) into tiles whose number of slices along
// each column is proportional to the column's share. An incremental job
// (not full) leaves a column uncut, one bucket, when it would get fewer
// than minColumnSlices slices (see uncutColumns).
func (cs columnSpans) buckets(fs []*fileInfo, target int64, full bool) []int {
	out := make([]int, len(cs.cols))
	shares := make([]float64, len(cs.cols))
	for i := range cs.cols {
		out[i], shares[i] = MaxRangeBuckets, 1
		var lo, hi statValue
		ok := true
		for n, f := range fs {
			k, found := cs.index[f]
			if !found || !cs.ranges[i][k].ok {
				ok = false
				break
			}
			r := cs.ranges[i][k]
			if n == 0 {
				lo, hi = r.lo, r.hi
				continue
			}
			if r.lo.kind != lo.kind {
				ok = false
				break
			}
			if compareStat(r.lo, lo) < 0 {
				lo = r.lo
			}
			if compareStat(r.hi, hi) > 0 {
				hi = r.hi
			}
		}
		if !ok || len(fs) == 0 {
			continue
		}
		var overlap, total int64
		for k, f := range cs.files {
			total += f.logical
			r := cs.ranges[i][k]
			if !r.ok || r.lo.kind != lo.kind || (compareStat(r.lo, hi) <= 0 && compareStat(r.hi, lo) >= 0) {
				overlap += f.logical
			}
		}
		if total <= 0 {
			continue
		}
		shares[i] = float64(overlap) / float64(total)
		out[i] = max(1, min(MaxRangeBuckets, int(math.Ceil(shares[i]*MaxRangeBuckets))))
	}
	if !full {
		var bytes int64
		for _, f := range fs {
			bytes += f.add.Size
		}
		outputs := max(1, bytes/max(1, target))
		for i, uncut := range uncutColumns(shares, cs.spread, outputs) {
			if uncut {
				out[i] = 1
			}
		}
	}
	return out
}

// minColumnSlices is the fewest slices along a clustering column for which
// an incremental Z-cube job cuts its outputs by that column at all.
const minColumnSlices = 4

// uncutColumns says which columns an incremental job of the given number
// of outputs leaves uncut. Tiles that minimise the files a range predicate
// on any one column reads have, along column i, slices in proportion to
// the job's share s_i of that column: s_i x (outputs / prod s)^(1/k) over
// the k columns still cut. A column of which the job covers only a part
// (s_i < 1) and that would get fewer than minColumnSlices slices is left
// uncut (the job's outputs each span the job's whole range of it) and the
// slices are shared again among the rest, the column of least share first
// (of equal shares, the one along which the partition's files are
// narrowest: spread is their average relative range per column, as the
// lightweight tier measures it; then the first in clustering order), until
// one column remains. A column the job covers wholly is cut as the curve
// cuts it (a first clustering of a table is tiled in every column).
//
// Why a minimum of 4 slices rather than 1: the job's share of a column it
// covers a part of is, in a time-ordered stream, a slice of time, which
// only shrinks as the table grows past it (a cube written when it held a
// tenth of the table's time range holds a hundredth of it ten times later,
// and its ideal slices fall by sqrt(10)); and the curve over a handful of
// buckets of a column cuts ragged tiles: in bench/clustering.sh the files
// of a 10-file cube over a narrow slice of ts spanned 0.17 of the key
// range each instead of 0.1, so a key predicate read 1.8 of them instead
// of 1.1 (a minimum of 1, 2, 3 and 4 slices read 50.9, 42.2, 39.0 and 37.7
// files per predicate at the end of the stream, cubes never merged).
func uncutColumns(shares, spread []float64, outputs int64) []bool {
	uncut := make([]bool, len(shares))
	for {
		prod, k := 1.0, 0
		for i, u := range uncut {
			if !u {
				prod *= shares[i]
				k++
			}
		}
		if k <= 1 {
			return uncut
		}
		scale := math.Pow(float64(outputs)/prod, 1/float64(k))
		low := -1
		for i, u := range uncut {
			if !u && shares[i] < 1 && shares[i]*scale < minColumnSlices && (low < 0 || shares[i] < shares[low] || (shares[i] == shares[low] && spread[i] < spread[low])) {
				low = i
			}
		}
		if low < 0 {
			return uncut
		}
		uncut[low] = true
	}
}

// packUnits cuts units (in order) into contiguous bins of at most maxBin
// bytes; a unit larger than maxBin gets a bin of its own.
func packUnits(units []*cubeUnit, maxBin int64) [][]*cubeUnit {
	var bins [][]*cubeUnit
	var cur []*cubeUnit
	var size int64
	for _, u := range units {
		if len(cur) > 0 && size+u.size > maxBin {
			bins = append(bins, cur)
			cur, size = nil, 0
		}
		cur = append(cur, u)
		size += u.size
	}
	if len(cur) > 0 {
		bins = append(bins, cur)
	}
	return bins
}

// boundedMerges groups an incremental run's units in a partition of
// files files: the new unclustered data is always a cube of its own; the
// partial cubes are merged only while they (with the new one) number more
// than 2 x sqrt(files), and then CubeMergeMinCubes of them at a time: the
// run of that many adjacent cubes (in the order of the clustering column
// along which the partial cubes are narrowest) whose largest is smallest,
// then of least total size, so that a merge of small cubes does not
// rewrite a large one beside them.
//
// Why that bound: a cube of a time-ordered stream covers a slice of the
// time column and the whole range of the others, and its outputs are cut
// by the other columns (uncutColumns), so a range predicate on another
// column reads about one file per cube and one on time reads the files of
// the cubes its range touches: over C cubes of F files in all, about
// C + F/C files, least at C = sqrt(F) and at most 1.25x that least for C
// up to 2 x sqrt(F). Merging below that bound rewrites bytes for little
// pruning; above it each merge of k cubes removes k-1 of them. Each byte
// is merged at most once while sqrt(F) stays below a merged cube's files.
// Groups are returned new data first; the partial cubes left out are
// skipped as SkipCubeTier.
func (st *state) boundedMerges(uncl, partials []*cubeUnit, files int) [][]*cubeUnit {
	groups := [][]*cubeUnit{uncl}
	m := st.s.cubeMinCubes
	var merge []*cubeUnit
	if float64(len(partials)+1) > 2*math.Sqrt(float64(files)) && len(partials) >= m {
		order := st.cubeOrder(partials)
		best, bestMax, bestSize := 0, int64(-1), int64(-1)
		for i := 0; i+m <= len(order); i++ {
			var size, largest int64
			for _, u := range order[i : i+m] {
				size += u.size
				largest = max(largest, u.size)
			}
			if bestMax < 0 || largest < bestMax || (largest == bestMax && size < bestSize) {
				best, bestMax, bestSize = i, largest, size
			}
		}
		merge = order[best : best+m]
		groups = append(groups, merge)
	}
	for _, u := range partials {
		if slices.Contains(merge, u) {
			continue
		}
		for _, f := range u.files {
			st.skip(SkipCubeTier, f)
		}
	}
	return groups
}

// cubeOrder returns the cubes in (min, max) order of the clustering column
// along which they are narrowest (the least average relative range over
// the cubes, on value ranks, as the lightweight tier measures files);
// cubes without usable stats for it go last, ties by cube id.
func (st *state) cubeOrder(cubes []*cubeUnit) []*cubeUnit {
	type cubeRange struct {
		u      *cubeUnit
		ok     bool
		lo, hi statValue
	}
	var best []cubeRange
	bestRange := math.Inf(1)
	for _, c := range st.cols {
		rs := make([]cubeRange, len(cubes))
		var values []statValue
		for i, u := range cubes {
			rs[i] = cubeRange{u: u, ok: true}
			for n, f := range u.files {
				lo, hi, ok := fileRange(f, c)
				if !ok || (n > 0 && lo.kind != rs[i].lo.kind) {
					rs[i].ok = false
					break
				}
				if n == 0 || compareStat(lo, rs[i].lo) < 0 {
					rs[i].lo = lo
				}
				if n == 0 || compareStat(hi, rs[i].hi) > 0 {
					rs[i].hi = hi
				}
			}
			if rs[i].ok && len(values) > 0 && values[0].kind != rs[i].lo.kind {
				rs[i].ok = false
			}
			if rs[i].ok {
				values = append(values, rs[i].lo, rs[i].hi)
			}
		}
		slices.SortFunc(values, compareStat)
		values = slices.CompactFunc(values, func(a, b statValue) bool { return compareStat(a, b) == 0 })
		rank := func(v statValue) int {
			n, _ := slices.BinarySearchFunc(values, v, compareStat)
			return n
		}
		var sum float64
		for _, r := range rs {
			switch {
			case !r.ok:
				sum++
			case len(values) > 1:
				sum += float64(rank(r.hi)-rank(r.lo)) / float64(len(values)-1)
			}
		}
		if avg := sum / float64(len(rs)); avg < bestRange {
			best, bestRange = rs, avg
		}
	}
	slices.SortStableFunc(best, func(a, b cubeRange) int {
		if a.ok != b.ok {
			if a.ok {
				return -1
			}
			return 1
		}
		if a.ok {
			if c := compareStat(a.lo, b.lo); c != 0 {
				return c
			}
			if c := compareStat(a.hi, b.hi); c != 0 {
				return c
			}
		}
		return strings.Compare(a.u.id, b.u.id)
	})
	out := make([]*cubeUnit, len(best))
	for i, r := range best {
		out[i] = r.u
	}
	return out
}
