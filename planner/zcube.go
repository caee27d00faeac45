package planner

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"sort"
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
		// Size tiers apply while new data arrives; a partition without
		// unclustered data is quiet, and one merge of its partial cubes
		// settles it (as Delta merges them on every run).
		if !full && st.s.cubeMinCubes > 1 && len(units) > 0 {
			groups = st.similarSizeGroups(units, partials)
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
			j.Sort = &SortSpec{Columns: physical, Curve: curve, Buckets: spans.buckets(fs)}
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
	for i, c := range st.cols {
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
func (cs columnSpans) buckets(fs []*fileInfo) []int {
	out := make([]int, len(cs.cols))
	for i := range cs.cols {
		out[i] = MaxRangeBuckets
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
		share := float64(overlap) / float64(total)
		out[i] = max(1, min(MaxRangeBuckets, int(math.Ceil(share*MaxRangeBuckets))))
	}
	return out
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

// similarSizeGroups is size-tiered merging as Cassandra's STCS does it:
// partial cubes are bucketed by similar logical size (each within
// [0.5, 1.5] x its bucket's average, smallest first), the new unclustered
// data counting as one more member of the bucket its size falls in. A
// bucket is merged once it holds CubeMergeMinCubes members; otherwise the
// unclustered data becomes a cube of its own and the partial cubes wait.
// Each byte is then rewritten about once per size tier instead of on most
// clustering runs. Groups are returned in bucket order, the unclustered
// units first in theirs.
func (st *state) similarSizeGroups(uncl, partials []*cubeUnit) [][]*cubeUnit {
	var newBytes int64
	for _, u := range uncl {
		newBytes += u.size
	}
	type member struct {
		u    *cubeUnit // nil: the new unclustered data
		size int64
	}
	ms := make([]member, 0, len(partials)+1)
	for _, u := range partials {
		ms = append(ms, member{u, u.size})
	}
	if len(uncl) > 0 {
		ms = append(ms, member{nil, newBytes})
	}
	sort.SliceStable(ms, func(i, j int) bool {
		if ms[i].size != ms[j].size {
			return ms[i].size < ms[j].size
		}
		return ms[i].u != nil && (ms[j].u == nil || ms[i].u.id < ms[j].u.id)
	})
	var groups [][]*cubeUnit
	var bucket []member
	var sum int64
	flush := func() {
		hasNew := false
		for _, m := range bucket {
			hasNew = hasNew || m.u == nil
		}
		if len(bucket) >= st.s.cubeMinCubes {
			var g []*cubeUnit
			if hasNew {
				g = append(g, uncl...)
			}
			for _, m := range bucket {
				if m.u != nil {
					g = append(g, m.u)
				}
			}
			groups = append(groups, g)
		} else {
			if hasNew {
				groups = append(groups, uncl)
			}
			for _, m := range bucket {
				if m.u != nil {
					for _, f := range m.u.files {
						st.skip(SkipCubeTier, f)
					}
				}
			}
		}
		bucket, sum = nil, 0
	}
	for _, m := range ms {
		if len(bucket) > 0 {
			avg := float64(sum) / float64(len(bucket))
			if float64(m.size) > 1.5*avg {
				flush()
			}
		}
		bucket = append(bucket, m)
		sum += m.size
	}
	if len(bucket) > 0 {
		flush()
	}
	return groups
}
