// Command autoclust is the CLUSTER BY AUTO benchmark, measured on real
// tables: a synthetic table of eight long columns (clusteradvise/synth) is
// written as an ingest stream leaves it (many small snappy parquet files
// in random order, each add with the statistics compactord's collector
// computes), and copied once per workload (data files hard-linked). Each
// copy gets 500 predicates of its workload (ranges on a; equality on b and
// ranges on c; uniform over all columns) as pushed evidence, the path of
// `compactord predicates add` and POST /tables/{name}/predicates
// (clusteradvise.ReadPushed, RecordPushed); then the daemon's own runner
// (runner.Backend with runner.DefaultOps) runs the autocluster operation,
// which samples the table, advises, decides and sets the delta.clustering
// key, and the compaction operation, which clusters the table on that key
// with the real Z-cube writer at the policy's target file size.
//
// Files read by 500 held-out predicates of each workload are counted on
// the tables' live files with the min/max statistics their adds carry in
// the Delta log (predicate.MayMatch over predicate.DeltaStats, the data
// skipping a reader does): before (the ingested table), binpacked (the
// table compacted at the target size without a key) and after. The best
// key of at most two columns is found by clustering a copy of the table on
// each of the 36 keys for real (or, with -shortlist N, on the N keys per
// workload the estimator ranks best), and the estimator's figures (the
// advisor's sample laid out on the key at the file count the advisor
// assumes) are compared with the measured ones.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/autocluster"
	"github.com/compactord/compactord/clusteradvise"
	"github.com/compactord/compactord/clusteradvise/synth"
	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/predicate"
	"github.com/compactord/compactord/internal/units"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/runner"
	"github.com/compactord/compactord/scheduler"
	"github.com/compactord/compactord/tableop"
)

func main() {
	var cfg config
	flag.IntVar(&cfg.rows, "rows", 2_000_000, "rows of the synthetic table")
	flag.IntVar(&cfg.ingestRows, "ingest-rows", 2000, "rows of each ingested (small) file")
	target := flag.String("target", "512KiB", "the policy's target file `size`")
	minTable := flag.String("min-table-size", "16MiB", "CLUSTER BY AUTO's table size threshold (the daemon's default, 1 GiB, is over the synthetic table)")
	maxUncl := flag.String("max-unclustered", "8MiB", "the policy's clustering max_unclustered_bytes: auto clusters on Z-cubes over it")
	flag.IntVar(&cfg.sampleRows, "sample", clusteradvise.DefaultSampleRows, "rows the advisor samples")
	flag.IntVar(&cfg.n, "predicates", 500, "predicates per workload (and as many held out)")
	flag.IntVar(&cfg.shortlist, "shortlist", 0, "cluster for real only the `N` keys per workload the estimator ranks best (0: all 36)")
	flag.StringVar(&cfg.work, "work", "bench/out/autoclust/tables", "`directory` for the tables (emptied first)")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the per-key tables (else each is removed once measured)")
	jsonOut := flag.String("json-out", "", "also write the results as JSON to this `file`")
	flag.Parse()
	var err error
	for _, s := range []struct {
		text string
		to   *int64
	}{{*target, &cfg.target}, {*minTable, &cfg.minTable}, {*maxUncl, &cfg.maxUnclustered}} {
		if *s.to, err = units.ParseSize(s.text); err != nil {
			fail(err)
		}
	}
	cfg.log = hclog.New(&hclog.LoggerOptions{Name: "autoclust", Level: hclog.Warn, Output: os.Stderr})
	res, err := run(context.Background(), cfg)
	if err != nil {
		fail(err)
	}
	printText(res)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "autoclust:", err)
	os.Exit(1)
}

type config struct {
	rows, ingestRows, sampleRows, n, shortlist int
	target, minTable, maxUnclustered           int64
	work                                       string
	keep                                       bool
	log                                        hclog.Logger
}

// Results is the benchmark's outcome.
type Results struct {
	Rows           int     `json:"rows"`
	TargetFileSize int64   `json:"target_file_size"`
	TableBytes     int64   `json:"table_bytes"`
	IngestFiles    int     `json:"ingest_files"`
	BinpackFiles   int     `json:"binpack_files"`
	LayoutFiles    int     `json:"estimator_layout_files"`
	KeysClustered  int     `json:"keys_clustered"`
	ClusterSeconds float64 `json:"mean_cluster_seconds"`
	// KeyFiles is the file count of each really clustered key's table.
	KeyFiles  map[string]int `json:"key_files"`
	Workloads []Result       `json:"workloads"`
}

// Result is one workload's outcome. Files read are means per held-out
// predicate.
type Result struct {
	Workload string   `json:"workload"`
	Picked   []string `json:"picked"`
	Verdict  string   `json:"verdict"`
	Files    int      `json:"files_after"`
	// Before is the ingested table, Binpack the table compacted at the
	// target size without a key.
	Before        float64 `json:"before"`
	Binpack       float64 `json:"binpacked"`
	AfterMeasured float64 `json:"after_measured"`
	AfterEstimate float64 `json:"after_estimated"`
	// Fewer is Before/After, FewerBinpack Binpack/After.
	Fewer        float64 `json:"fewer"`
	FewerBinpack float64 `json:"fewer_than_binpacked"`
	// BestKey2 is the key of at most two columns with the fewest files read
	// measured on its really clustered table; EstBestKey2 the estimator's
	// best of all 36.
	BestKey2      []string `json:"best_key_2"`
	Best2Measured float64  `json:"best2_measured"`
	EstBestKey2   []string `json:"estimator_best_key_2"`
	VsBest2       float64  `json:"vs_best2"`
	// EstRelErr is (estimated - measured) / measured of the mean files
	// read on the pick; EstRelErrKeys the mean of |that| over every key
	// clustered for real; EstAbsErr the mean |estimated - measured| per
	// predicate on the pick, in files.
	EstRelErr     float64 `json:"estimator_relative_error"`
	EstRelErrKeys float64 `json:"estimator_mean_abs_relative_error_keys"`
	EstAbsErr     float64 `json:"estimator_abs_error_files"`
	AdviseSeconds float64 `json:"advise_seconds"`
	TotalSeconds  float64 `json:"autocluster_and_compaction_seconds"`
}

// daemon runs operations the way `compactord run` does: runner.Backend
// over runner.DefaultOps, with the autocluster operation's table size
// threshold lowered to cfg.minTable.
type daemon struct {
	b   *runner.Backend
	cfg config
}

func newDaemon(cfg config) *daemon {
	ops := runner.DefaultOps(compaction.RunOptions{})
	if f, i := tableop.Named(ops, autocluster.Name); i >= 0 {
		ops[i] = runner.Factory{Name: f.Name, New: func(p policies.Policy, env tableop.Env) (tableop.Op[*delta.Table], bool, error) {
			op, ok, err := f.New(p, env)
			if o, isAuto := op.(*autocluster.Op); ok && err == nil && isAuto {
				o.Options.MinTableBytes = cfg.minTable
			}
			return op, ok, err
		}}
	}
	return &daemon{b: &runner.Backend{Tables: runner.NewTables(), Logger: cfg.log, Ops: ops}, cfg: cfg}
}

// policy is the table's policy: strategy auto, the target file size, no
// settle window (the benchmark's files are all just written), and
// `clustering { columns = "auto" }` when auto.
func (d *daemon) policy(name, dir string, auto bool) policies.Policy {
	p := policies.DefaultPolicy()
	p.Name, p.URL = name, "file://"+dir
	p.TargetFileSize = d.cfg.target
	p.SettleWindow = 0
	p.Clustering.Auto = auto
	p.Clustering.MaxUnclusteredBytes = d.cfg.maxUnclustered
	return p
}

func (d *daemon) run(ctx context.Context, p policies.Policy, op string) (scheduler.RunReport, error) {
	return d.b.Run(ctx, scheduler.RunRequest[policies.Policy]{Table: p.Name, Op: op, Policy: p, Reason: "bench"})
}

// compact runs compaction until a run commits nothing.
func (d *daemon) compact(ctx context.Context, p policies.Policy) error {
	for range 10 {
		rep, err := d.run(ctx, p, compaction.Name)
		if err != nil {
			return err
		}
		if !rep.Committed {
			return nil
		}
	}
	return fmt.Errorf("table %s: compaction still committing after 10 runs", p.Name)
}

// layout is a table's live files with the statistics of their adds.
type layout struct {
	files   []predicate.FileStats
	bytes   int64
	noStats int // files whose adds carry no min/max for a column
}

func (d *daemon) layoutOf(ctx context.Context, p policies.Policy) (*layout, *delta.Snapshot, error) {
	t, err := d.b.Tables.Get(ctx, p.URL)
	if err != nil {
		return nil, nil, err
	}
	snap, err := delta.LoadSnapshot(ctx, t, -1)
	if err != nil {
		return nil, nil, err
	}
	l := &layout{}
	for _, a := range snap.Files {
		l.bytes += a.Size
		st, err := a.FullStats()
		if err != nil || st == nil || len(st.MinValues) < len(synth.Columns) || len(st.MaxValues) < len(synth.Columns) {
			l.noStats++
		}
		if err != nil {
			st = nil // read in full, as a reader would
		}
		l.files = append(l.files, predicate.DeltaStats{Stats: st})
	}
	return l, snap, nil
}

// filesRead is the files each predicate reads and their mean.
func filesRead(es []predicate.Expr, files []predicate.FileStats) (float64, []float64) {
	per := make([]float64, len(es))
	var sum float64
	for i, e := range es {
		for _, f := range files {
			if ok, err := predicate.MayMatch(e, f); ok || err != nil {
				per[i]++
			}
		}
		sum += per[i]
	}
	return sum / float64(max(1, len(es))), per
}

var workloads = []string{synth.WorkloadA, synth.WorkloadBC, synth.WorkloadUniform}

func keyName(k []string) string {
	if len(k) == 0 {
		return "(none)"
	}
	s := slices.Clone(k)
	slices.Sort(s)
	return strings.Join(s, ",")
}

func allKeys() [][]string {
	var keys [][]string
	for i, a := range synth.Columns {
		keys = append(keys, []string{a})
		for _, b := range synth.Columns[i+1:] {
			keys = append(keys, []string{a, b})
		}
	}
	return keys
}

func run(ctx context.Context, cfg config) (*Results, error) {
	var err error
	if cfg.work, err = filepath.Abs(cfg.work); err != nil {
		return nil, err
	}
	// The benchmark's own scratch directory (it writes every table in
	// it), no user's table: not the deletion gate.
	if err := os.RemoveAll(cfg.work); err != nil {
		return nil, err
	}
	d := newDaemon(cfg)
	defer d.b.Tables.Close()
	out := &Results{Rows: cfg.rows, TargetFileSize: cfg.target, KeyFiles: map[string]int{}}

	// The ingested table.
	baseDir := filepath.Join(cfg.work, "base")
	tbl := synth.NewTable(cfg.rows, 1)
	n, err := writeBase(baseDir, tbl, cfg.ingestRows)
	if err != nil {
		return nil, err
	}
	tbl = nil
	out.IngestFiles = n
	base := d.policy("base", baseDir, false)
	before, baseSnap, err := d.layoutOf(ctx, base)
	if err != nil {
		return nil, err
	}
	if before.noStats > 0 {
		return nil, fmt.Errorf("%d ingested files without min/max statistics", before.noStats)
	}
	out.TableBytes = before.bytes
	cols, err := clusteradvise.TableColumns(baseSnap)
	if err != nil {
		return nil, err
	}
	resolve := func(p []string) (predicate.Column, bool) { c, ok := cols[p[len(p)-1]]; return c, ok }
	held := map[string][]predicate.Expr{}
	for wi, w := range workloads {
		for _, text := range synth.Workload(w, cfg.n, uint64(200+wi)) {
			e, err := predicate.ParseSpark(text, resolve)
			if err != nil {
				return nil, err
			}
			held[w] = append(held[w], e.Expr)
		}
	}
	// The advisor's sample, as the autocluster operation draws it from the
	// ingested files, and the file count it lays the sample out in.
	baseTable, err := d.b.Tables.Get(ctx, base.URL)
	if err != nil {
		return nil, err
	}
	smp, err := clusteradvise.ReadSample(ctx, baseTable, baseSnap, cols, cfg.sampleRows)
	if err != nil {
		return nil, err
	}
	out.LayoutFiles = int(max(1, (before.bytes+cfg.target/2)/cfg.target))
	estimate := func(w string, key []string) (float64, []float64, error) {
		fs, err := clusteradvise.Layout(smp, key, cols, out.LayoutFiles)
		if err != nil {
			return 0, nil, err
		}
		m, per := filesRead(held[w], fs)
		scale := float64(out.LayoutFiles) / float64(len(fs)) // a sample smaller than the file count
		for i := range per {
			per[i] *= scale
		}
		return m * scale, per, nil
	}

	// The table compacted at the target size without a key.
	bp := d.policy("binpack", filepath.Join(cfg.work, "binpack"), false)
	if err := copyTable(baseDir, filepath.Join(cfg.work, "binpack")); err != nil {
		return nil, err
	}
	if err := d.compact(ctx, bp); err != nil {
		return nil, err
	}
	binpacked, _, err := d.layoutOf(ctx, bp)
	if err != nil {
		return nil, err
	}
	out.BinpackFiles = len(binpacked.files)

	// Each workload: evidence pushed, then the daemon's operations.
	for wi, w := range workloads {
		r := Result{Workload: w}
		r.Before, _ = filesRead(held[w], before.files)
		r.Binpack, _ = filesRead(held[w], binpacked.files)
		dir := filepath.Join(cfg.work, "auto-"+w)
		if err := copyTable(baseDir, dir); err != nil {
			return nil, err
		}
		p := d.policy("auto-"+w, dir, true)
		t, err := d.b.Tables.Get(ctx, p.URL)
		if err != nil {
			return nil, err
		}
		now := time.Now().UTC()
		var lines strings.Builder
		train := synth.Workload(w, cfg.n, uint64(100+wi))
		for i, text := range train {
			at := now.Add(-time.Duration(len(train)-i) * 7 * 24 * time.Hour / time.Duration(len(train)))
			b, _ := json.Marshal(clusteradvise.Pushed{Predicate: text, Weight: 1, Time: at})
			lines.Write(append(b, '\n'))
		}
		batch, err := clusteradvise.ReadPushed(strings.NewReader(lines.String()), now)
		if err != nil {
			return nil, err
		}
		if _, err := clusteradvise.RecordPushed(ctx, t, batch, now); err != nil {
			return nil, err
		}
		start := time.Now()
		rep, err := d.run(ctx, p, autocluster.Name)
		if err != nil {
			return nil, err
		}
		r.AdviseSeconds = time.Since(start).Seconds()
		if len(rep.Held) > 0 {
			r.Verdict = rep.Held[0].Reason
		}
		if err := d.compact(ctx, p); err != nil {
			return nil, err
		}
		r.TotalSeconds = time.Since(start).Seconds()
		after, snap, err := d.layoutOf(ctx, p)
		if err != nil {
			return nil, err
		}
		if after.noStats > 0 {
			return nil, fmt.Errorf("table %s: %d clustered files without min/max statistics", p.Name, after.noStats)
		}
		if r.Picked, err = clusteradvise.CurrentKey(snap); err != nil {
			return nil, err
		}
		r.Files = len(after.files)
		var perMeasured []float64
		r.AfterMeasured, perMeasured = filesRead(held[w], after.files)
		r.Fewer = r.Before / math.Max(r.AfterMeasured, 1e-9)
		r.FewerBinpack = r.Binpack / math.Max(r.AfterMeasured, 1e-9)
		if len(r.Picked) > 0 {
			est, per, err := estimate(w, r.Picked)
			if err != nil {
				return nil, err
			}
			r.AfterEstimate = est
			r.EstRelErr = (est - r.AfterMeasured) / math.Max(r.AfterMeasured, 1e-9)
			var abs float64
			for i := range per {
				abs += math.Abs(per[i] - perMeasured[i])
			}
			r.EstAbsErr = abs / float64(len(per))
		} else {
			r.AfterEstimate = r.AfterMeasured
		}
		out.Workloads = append(out.Workloads, r)
		cfg.log.Warn("workload done", "workload", w, "picked", keyName(r.Picked), "before", r.Before, "after", r.AfterMeasured, "seconds", round(r.TotalSeconds))
	}

	// The exhaustive search: every key of at most two columns estimated;
	// all of them (or each workload's shortlist) clustered for real.
	keys := allKeys()
	ests := map[string]map[string]float64{} // workload -> key -> estimate
	want := map[string]bool{}
	for _, w := range workloads {
		ests[w] = map[string]float64{}
		for _, k := range keys {
			m, _, err := estimate(w, k)
			if err != nil {
				return nil, err
			}
			ests[w][keyName(k)] = m
		}
		ranked := slices.Clone(keys)
		sort.SliceStable(ranked, func(i, j int) bool { return ests[w][keyName(ranked[i])] < ests[w][keyName(ranked[j])] })
		for i, k := range ranked {
			if cfg.shortlist <= 0 || i < cfg.shortlist {
				want[keyName(k)] = true
			}
		}
	}
	for i := range out.Workloads {
		r := &out.Workloads[i]
		best := math.Inf(1)
		for _, k := range keys {
			if e := ests[r.Workload][keyName(k)]; e < best {
				best, r.EstBestKey2 = e, k
			}
		}
		if len(r.Picked) > 0 && len(r.Picked) <= 2 {
			want[keyName(r.Picked)] = true
		}
	}
	measured := map[string]map[string]float64{} // key -> workload -> files read
	var clusterSecs float64
	for _, k := range keys {
		name := keyName(k)
		if !want[name] {
			continue
		}
		dir := filepath.Join(cfg.work, "key-"+strings.ReplaceAll(name, ",", "-"))
		if err := copyTable(baseDir, dir); err != nil {
			return nil, err
		}
		p := d.policy("key-"+name, dir, false)
		t, err := d.b.Tables.Get(ctx, p.URL)
		if err != nil {
			return nil, err
		}
		snap, err := delta.LoadSnapshot(ctx, t, -1)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		if _, err := autocluster.Apply(ctx, t, snap, k, commit.Options{}); err != nil {
			return nil, err
		}
		if err := d.compact(ctx, p); err != nil {
			return nil, err
		}
		clusterSecs += time.Since(start).Seconds()
		l, _, err := d.layoutOf(ctx, p)
		if err != nil {
			return nil, err
		}
		out.KeyFiles[name] = len(l.files)
		measured[name] = map[string]float64{}
		for _, w := range workloads {
			measured[name][w], _ = filesRead(held[w], l.files)
		}
		out.KeysClustered++
		cfg.log.Warn("key clustered", "key", name, "files", len(l.files), "seconds", round(time.Since(start).Seconds()))
		if !cfg.keep {
			// A copy this benchmark made under its scratch directory.
			if err := os.RemoveAll(dir); err != nil {
				return nil, err
			}
		}
	}
	out.ClusterSeconds = clusterSecs / float64(max(1, out.KeysClustered))
	for i := range out.Workloads {
		r := &out.Workloads[i]
		best := math.Inf(1)
		var relErr float64
		for _, k := range keys {
			m, ok := measured[keyName(k)][r.Workload]
			if !ok {
				continue
			}
			if m < best {
				best, r.BestKey2 = m, k
			}
			relErr += math.Abs(ests[r.Workload][keyName(k)]-m) / math.Max(m, 1e-9)
		}
		r.Best2Measured = best
		r.EstRelErrKeys = relErr / float64(max(1, len(measured)))
		r.VsBest2 = r.AfterMeasured / math.Max(best, 1e-9)
	}
	return out, nil
}

func round(f float64) float64 { return math.Round(f*100) / 100 }

func printText(res *Results) {
	fmt.Printf("%d rows, %s in %d ingested files; binpacked at %s: %d files; the estimator lays out %d files; %d keys clustered for real (%.1f s each)\n",
		res.Rows, units.FormatBytes(res.TableBytes), res.IngestFiles, units.FormatBytes(res.TargetFileSize), res.BinpackFiles, res.LayoutFiles, res.KeysClustered, res.ClusterSeconds)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\tpicked\tfiles\tbefore\tbinpacked\tafter (measured)\tafter (estimated)\tfewer\tfewer than binpacked\tbest key <=2 (measured)\tbest measured\tpicked/best\testimator's best\test. error\test. abs. error\test. error, all keys\ts")
	for _, r := range res.Workloads {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.1f\t%.2f\t%.2f\t%.1fx\t%.1fx\t%s\t%.2f\t%.2f\t%s\t%+.1f%%\t%.2f\t%.1f%%\t%.1f\n",
			r.Workload, keyName(r.Picked), r.Files, r.Before, r.Binpack, r.AfterMeasured, r.AfterEstimate, r.Fewer, r.FewerBinpack,
			keyName(r.BestKey2), r.Best2Measured, r.VsBest2, keyName(r.EstBestKey2), 100*r.EstRelErr, r.EstAbsErr, 100*r.EstRelErrKeys, r.TotalSeconds)
	}
	tw.Flush()
	for _, r := range res.Workloads {
		fmt.Printf("%s: %s\n", r.Workload, r.Verdict)
	}
}
