// Command autoclust is the CLUSTER BY AUTO benchmark: synthetic tables of
// eight integer columns (clusteradvise/synth), three workloads of 500
// predicates each (ranges on a; equality on b and ranges on c; uniform
// over all columns), the advisor's pick from a bounded sample, and the
// files read by 500 held-out predicates of each workload before and after
// the table is laid out on the pick, against the best key of at most two
// columns found by exhaustive search with the same estimator. It prints
// the estimator's error (estimated vs measured files read) per workload.
//
// What is simulated: the table lives in memory and no parquet is written;
// "after clustering" is every row ordered on the Hilbert key of the pick
// (range buckets drawn from a sample, as compactord's writer does) and cut
// into files of equal row counts, whose min/max statistics are computed
// from all their rows; files read are counted with predicate.MayMatch, as
// a reader's data skipping prunes.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/compactord/compactord/clusteradvise"
	"github.com/compactord/compactord/clusteradvise/synth"
	"github.com/compactord/compactord/delta/predicate"
	"github.com/compactord/compactord/internal/curve"
)

func main() {
	rows := flag.Int("rows", 2_000_000, "rows of the synthetic table")
	perFile := flag.Int("rows-per-file", 10_000, "rows of a file at the target size")
	sampleRows := flag.Int("sample", clusteradvise.DefaultSampleRows, "rows the advisor samples")
	n := flag.Int("predicates", 500, "predicates per workload (and as many held out)")
	jsonOut := flag.String("json-out", "", "also write the results as JSON to this `file`")
	flag.Parse()
	res, err := run(*rows, *perFile, *sampleRows, *n)
	if err != nil {
		fmt.Fprintln(os.Stderr, "autoclust:", err)
		os.Exit(1)
	}
	printText(res)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "autoclust:", err)
			os.Exit(1)
		}
	}
}

// Result is one workload's outcome.
type Result struct {
	Workload string   `json:"workload"`
	Picked   []string `json:"picked"`
	Verdict  string   `json:"verdict"`
	// Files read per held-out predicate (means).
	Before        float64  `json:"before"`
	AfterMeasured float64  `json:"after_measured"`
	AfterEstimate float64  `json:"after_estimated"`
	Speedup       float64  `json:"speedup"`
	BestKey2      []string `json:"best_key_2"`
	Best2Measured float64  `json:"best2_measured"`
	Best2Estimate float64  `json:"best2_estimated"`
	VsBest2       float64  `json:"vs_best2"`
	// Estimator error on the pick and the exhaustive best key: the mean
	// over them of |estimated - measured| / measured of the mean files
	// read, and the mean absolute error per predicate in files.
	EstRelErr      float64 `json:"estimator_relative_error"`
	EstAbsErr      float64 `json:"estimator_abs_error_files"`
	AdviseSeconds  float64 `json:"advise_seconds"`
	LayoutFiles    int     `json:"files"`
	CandidatesSeen int     `json:"candidates"`
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func run(rows, perFile, sampleRows, n int) ([]Result, error) {
	tbl := synth.NewTable(rows, 1)
	cols := synth.ColumnMap()
	nFiles := (rows + perFile - 1) / perFile
	ingest := make([]int, rows)
	for i := range ingest {
		ingest[i] = i
	}
	current := filesOf(tbl, ingest, nFiles)
	smp := tbl.Sample(sampleRows, 2)
	resolve := func(p []string) (predicate.Column, bool) { c, ok := cols[p[len(p)-1]]; return c, ok }
	// The measured layouts, per key (the same for every workload).
	layouts := map[string][]predicate.FileStats{}
	layoutOf := func(key []string) ([]predicate.FileStats, error) {
		k := strings.Join(key, ",")
		if fs, ok := layouts[k]; ok {
			return fs, nil
		}
		order, err := hilbertOrder(tbl, key, smp)
		if err != nil {
			return nil, err
		}
		fs := filesOf(tbl, order, nFiles)
		layouts[k] = fs
		return fs, nil
	}
	var out []Result
	for wi, w := range []string{synth.WorkloadA, synth.WorkloadBC, synth.WorkloadUniform} {
		train := synth.Workload(w, n, uint64(100+wi))
		held := synth.Workload(w, n, uint64(200+wi))
		rec := clusteradvise.NewRecord(0)
		for i, p := range train {
			if err := rec.Add(p, 1, epoch.Add(-time.Duration(n-i)*7*24*time.Hour/time.Duration(n)), clusteradvise.SourcePush); err != nil {
				return nil, err
			}
		}
		rec.DecayTo(epoch)
		opts := clusteradvise.DefaultOptions()
		opts.MinTableBytes = 0
		var files []clusteradvise.File
		for _, f := range current {
			files = append(files, clusteradvise.File{Size: int64(perFile * synth.RowBytes), Stats: f})
		}
		start := time.Now()
		adv, err := clusteradvise.Advise(clusteradvise.Input{Columns: cols, Files: files, TargetFileSize: int64(perFile * synth.RowBytes), Sample: smp, Evidence: rec}, opts)
		if err != nil {
			return nil, err
		}
		v := clusteradvise.Decide(adv, clusteradvise.State{}, epoch, opts)
		r := Result{Workload: w, Verdict: v.Reason, AdviseSeconds: time.Since(start).Seconds(), LayoutFiles: nFiles, CandidatesSeen: len(adv.Ranking)}
		var heldExprs []predicate.Expr
		for _, p := range held {
			e, err := predicate.ParseSpark(p, resolve)
			if err != nil {
				return nil, err
			}
			heldExprs = append(heldExprs, e.Expr)
		}
		r.Before = meanFiles(heldExprs, current)
		measured := map[string]float64{}
		measure := func(key []string) (float64, error) {
			k := strings.Join(key, ",")
			if m, ok := measured[k]; ok {
				return m, nil
			}
			fs, err := layoutOf(key)
			if err != nil {
				return 0, err
			}
			m := meanFiles(heldExprs, fs)
			measured[k] = m
			return m, nil
		}
		estimate := func(key []string) (float64, []float64, error) {
			fs, err := clusteradvise.Layout(smp, key, cols, nFiles)
			if err != nil {
				return 0, nil, err
			}
			scale := float64(nFiles) / float64(len(fs))
			per := make([]float64, len(heldExprs))
			var sum float64
			for i, e := range heldExprs {
				per[i] = float64(countFiles(e, fs)) * scale
				sum += per[i]
			}
			return sum / float64(len(heldExprs)), per, nil
		}
		if v.Change {
			r.Picked = v.Key
			if r.AfterMeasured, err = measure(v.Key); err != nil {
				return nil, err
			}
			if r.AfterEstimate, _, err = estimate(v.Key); err != nil {
				return nil, err
			}
		} else {
			r.AfterMeasured, r.AfterEstimate = r.Before, r.Before
		}
		r.Speedup = r.Before / math.Max(r.AfterMeasured, 1e-9)
		// Exhaustive search over keys of at most two columns, same estimator.
		best := math.Inf(1)
		var relErrs, absErrs []float64
		for i, a := range synth.Columns {
			keys := [][]string{{a}}
			for _, b := range synth.Columns[i+1:] {
				keys = append(keys, []string{a, b})
			}
			for _, key := range keys {
				est, _, err := estimate(key)
				if err != nil {
					return nil, err
				}
				if est < best {
					best, r.BestKey2, r.Best2Estimate = est, key, est
				}
			}
		}
		// The estimator's error, on the keys measured (the pick and the
		// exhaustive best): per predicate and of the mean.
		for _, key := range [][]string{r.Picked, r.BestKey2} {
			if len(key) == 0 {
				continue
			}
			est, per, err := estimate(key)
			if err != nil {
				return nil, err
			}
			fs, err := layoutOf(key)
			if err != nil {
				return nil, err
			}
			var abs, meas float64
			for j, e := range heldExprs {
				m := float64(countFiles(e, fs))
				meas += m
				abs += math.Abs(per[j] - m)
			}
			meas /= float64(len(heldExprs))
			relErrs = append(relErrs, math.Abs(est-meas)/math.Max(meas, 1))
			absErrs = append(absErrs, abs/float64(len(heldExprs)))
		}
		r.Best2Measured, _ = measure(r.BestKey2)
		r.VsBest2 = r.AfterMeasured / math.Max(r.Best2Measured, 1e-9)
		r.EstRelErr, r.EstAbsErr = mean(relErrs), mean(absErrs)
		out = append(out, r)
	}
	return out, nil
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(max(1, len(xs)))
}

// hilbertOrder orders every row on the Hilbert key of key (Z-order for one
// column) with range buckets drawn from the sample's values, as
// compactord's clustered rewrite does.
func hilbertOrder(tbl *synth.Table, key []string, smp *clusteradvise.Sample) ([]int, error) {
	bz := make([]*curve.Bucketizer[int64], len(key))
	nb := 1
	for d, c := range key {
		vals := make([]int64, 0, smp.Rows)
		for _, v := range smp.Values[c] {
			vals = append(vals, v.I)
		}
		bz[d] = curve.NewBucketizer(vals, 1000, func(a, b int64) int { return int(sign(a - b)) })
		nb = max(nb, bz[d].NumBuckets())
	}
	enc, err := curve.ForColumns(len(key), nb)
	if err != nil {
		return nil, err
	}
	if enc.KeyLen() > 8 {
		return nil, fmt.Errorf("key %v: %d-byte curve keys", key, enc.KeyLen())
	}
	// Keys of at most 8 bytes compare as big-endian integers.
	keys := make([]uint64, tbl.Rows)
	coords := make([]uint32, len(key))
	var buf []byte
	for i := range keys {
		for d, c := range key {
			coords[d] = bz[d].Bucket(tbl.Data[c][i])
		}
		if buf, err = enc.AppendKey(buf[:0], coords); err != nil {
			return nil, err
		}
		var k uint64
		for _, b := range buf {
			k = k<<8 | uint64(b)
		}
		keys[i] = k << (8 * (8 - len(buf)))
	}
	order := make([]int, tbl.Rows)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return keys[order[i]] < keys[order[j]] })
	return order, nil
}

func sign(x int64) int64 {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

// fileStats is one file's min/max statistics over every column.
type fileStats struct {
	rows     int64
	min, max map[string]*predicate.Value
}

func (f *fileStats) NumRecords() (int64, bool) { return f.rows, true }

func (f *fileStats) Column(col predicate.Column) (predicate.ColumnStats, error) {
	zero := int64(0)
	c := col.Path[0]
	return predicate.ColumnStats{Min: f.min[c], Max: f.max[c], NullCount: &zero}, nil
}

// filesOf cuts the rows in order into n files and computes their stats
// from all their rows.
func filesOf(tbl *synth.Table, order []int, n int) []predicate.FileStats {
	out := make([]predicate.FileStats, 0, n)
	for g := range n {
		lo, hi := g*len(order)/n, (g+1)*len(order)/n
		fs := &fileStats{rows: int64(hi - lo), min: map[string]*predicate.Value{}, max: map[string]*predicate.Value{}}
		for _, c := range synth.Columns {
			data := tbl.Data[c]
			mn, mx := int64(math.MaxInt64), int64(math.MinInt64)
			for _, i := range order[lo:hi] {
				mn, mx = min(mn, data[i]), max(mx, data[i])
			}
			a, b := predicate.Int(mn), predicate.Int(mx)
			fs.min[c], fs.max[c] = &a, &b
		}
		out = append(out, fs)
	}
	return out
}

func countFiles(e predicate.Expr, files []predicate.FileStats) int {
	n := 0
	for _, f := range files {
		if ok, err := predicate.MayMatch(e, f); ok || err != nil {
			n++
		}
	}
	return n
}

func meanFiles(es []predicate.Expr, files []predicate.FileStats) float64 {
	var s float64
	for _, e := range es {
		s += float64(countFiles(e, files))
	}
	return s / float64(len(es))
}

func printText(res []Result) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\tpicked\tfiles\tbefore\tafter (measured)\tafter (estimated)\tfewer\tbest key <=2\tbest measured\tpicked/best\test. rel. error\test. abs. error\tadvise s")
	for _, r := range res {
		picked := "(none)"
		if len(r.Picked) > 0 {
			p := slices.Clone(r.Picked)
			slices.Sort(p)
			picked = strings.Join(p, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.2f\t%.2f\t%.1fx\t%s\t%.2f\t%.2f\t%.1f%%\t%.2f\t%.1f\n", r.Workload, picked, r.LayoutFiles, r.Before, r.AfterMeasured, r.AfterEstimate, r.Speedup,
			strings.Join(r.BestKey2, ","), r.Best2Measured, r.VsBest2, 100*r.EstRelErr, r.EstAbsErr, r.AdviseSeconds)
	}
	tw.Flush()
	for _, r := range res {
		fmt.Printf("%s: %s\n", r.Workload, r.Verdict)
	}
}
