// Command clustering simulates an ingest stream into a clustered Delta table
// and runs the planner after every k batches, to compare compaction
// strategies by write amplification and data-skipping pruning.
//
// The simulation is honest about the things the comparison depends on:
// every simulated file holds its real rows in memory; a rewrite's outputs
// are built from the rows of its sources (sorted along the real Hilbert /
// Z-order curve of internal/curve for zcube jobs, concatenated in source
// order otherwise); every file's stats are computed from the rows it holds;
// file sizes are rows x a fixed row width. What is simulated: no parquet
// bytes are written, and the table lives in memory rather than in a log.
package main

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/schema"
	"github.com/compactord/compactord/delta/stats"
	"github.com/compactord/compactord/internal/curve"
	"github.com/compactord/compactord/planner"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/runner"
	"github.com/compactord/compactord/scheduler"
)

// row is one ingested record: its clustering column values.
type row struct {
	ts  int64 // event time (ms): mostly the batch's minute, some late
	key int64 // uniform random key
}

func (r row) col(i int) int64 {
	if i == 0 {
		return r.ts
	}
	return r.key
}

var columnNames = []string{"ts", "key"}

// config are the simulation's knobs.
type config struct {
	batches, batchRows, every int
	rowBytes                  int64
	target                    int64
	maxUnclustered, minCube   int64
	lateFraction              float64
	lateBatches               int
	queries                   int
	measureEvery              int
	seed                      uint64
	rangeBuckets              int
	minFile                   int64
	strategies                string
	equalBuckets              bool
	sweep                     string
	daemon                    bool
	cubeMergeMin              int
}

// file is a simulated data file: its add action and its rows.
type file struct {
	add  *actions.Add
	rows []row
}

// table is the simulated table state.
type table struct {
	cfg       config
	files     map[string]*file
	version   int64
	nextID    int
	ingested  int64
	rewritten int64
	jobs      map[planner.Strategy]int
	bytesBy   map[planner.Strategy]int64
}

func newTable(cfg config) *table {
	return &table{cfg: cfg, files: map[string]*file{}, jobs: map[planner.Strategy]int{}, bytesBy: map[planner.Strategy]int64{}}
}

func (t *table) addFile(rows []row, mtime int64, tags map[string]string, provider string) {
	t.nextID++
	path := fmt.Sprintf("part-%06d.parquet", t.nextID)
	n := int64(len(rows))
	mins, maxs := map[string]any{}, map[string]any{}
	for c, name := range columnNames {
		lo, hi := rows[0].col(c), rows[0].col(c)
		for _, r := range rows[1:] {
			v := r.col(c)
			lo, hi = min(lo, v), max(hi, v)
		}
		mins[name] = json.Number(strconv.FormatInt(lo, 10))
		maxs[name] = json.Number(strconv.FormatInt(hi, 10))
	}
	a := &actions.Add{
		Path:             path,
		PartitionValues:  map[string]*string{},
		Size:             n * t.cfg.rowBytes,
		ModificationTime: mtime,
		Tags:             tags,
		ParsedStats:      &stats.Stats{NumRecords: &n, MinValues: mins, MaxValues: maxs},
	}
	if provider != "" {
		p := provider
		a.ClusteringProvider = &p
	}
	t.files[path] = &file{add: a, rows: rows}
}

func (t *table) snapshot() *delta.Snapshot {
	snap := &delta.Snapshot{
		Version: t.version,
		Schema: &schema.StructType{Fields: []*schema.StructField{
			{Name: "ts", Type: &schema.DataType{Name: "long"}},
			{Name: "key", Type: &schema.DataType{Name: "long"}},
		}},
		Domains: map[string]actions.DomainMetadata{
			"delta.clustering": {Domain: "delta.clustering", Configuration: `{"clusteringColumns":[["ts"],["key"]]}`},
		},
	}
	for _, f := range t.files {
		snap.Files = append(snap.Files, f.add)
	}
	sort.Slice(snap.Files, func(i, j int) bool { return snap.Files[i].Path < snap.Files[j].Path })
	return snap
}

// sortByCurve orders rows as the writer does for a zcube job: each column
// range-bucketed by boundaries from a sample of the job's values (at most
// the job's bucket count for the column), the bucket ids combined by the
// curve, rows sorted by the key.
func sortByCurve(rows []row, cfg config, seed uint64, spec *planner.SortSpec) error {
	n := len(columnNames)
	bks := make([]*curve.Bucketizer[int64], n)
	for c := 0; c < n; c++ {
		res := curve.NewReservoir[int64](20*cfg.rangeBuckets, seed+uint64(c))
		for _, r := range rows {
			res.Add(r.col(c))
		}
		nb := cfg.rangeBuckets
		if c < len(spec.Buckets) && spec.Buckets[c] > 0 && !cfg.equalBuckets {
			nb = min(nb, spec.Buckets[c])
		}
		bks[c] = curve.NewBucketizer(res.Sample(), nb, cmp.Compare[int64])
	}
	enc, err := curve.ForColumns(n, cfg.rangeBuckets)
	if err != nil {
		return err
	}
	type keyed struct {
		k uint64
		r row
	}
	ks := make([]keyed, len(rows))
	coords := make([]uint32, n)
	buf := make([]byte, 0, enc.KeyLen())
	for i, r := range rows {
		for c := 0; c < n; c++ {
			coords[c] = bks[c].Bucket(r.col(c))
		}
		key, err := enc.AppendKey(buf[:0], coords)
		if err != nil {
			return err
		}
		var k uint64
		for _, b := range key {
			k = k<<8 | uint64(b)
		}
		ks[i] = keyed{k, r}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return cmp.Compare(a.k, b.k) })
	for i := range ks {
		rows[i] = ks[i].r
	}
	return nil
}

// apply executes a plan: each job's sources are replaced by outputs built
// from their rows.
func (t *table) apply(pl *planner.CompactionPlan, now int64) error {
	for _, j := range pl.Jobs {
		var rows []row
		for _, src := range j.Sources {
			f, ok := t.files[src.Path]
			if !ok {
				return fmt.Errorf("job %s: source %s is not live", j.ID, src.Path)
			}
			rows = append(rows, f.rows...)
		}
		for _, src := range j.Sources {
			delete(t.files, src.Path)
		}
		t.jobs[j.Strategy]++
		if j.Sort == nil {
			// Compaction: one output per bin, rows in source order.
			t.addFile(rows, now, nil, "")
			t.rewritten += int64(len(rows)) * t.cfg.rowBytes
			t.bytesBy[j.Strategy] += int64(len(rows)) * t.cfg.rowBytes
			continue
		}
		if err := sortByCurve(rows, t.cfg, uint64(t.version), j.Sort); err != nil {
			return err
		}
		// Range-partition into max(1, bytes/target) outputs of equal rows.
		total := int64(len(rows)) * t.cfg.rowBytes
		nOut := max(1, int(total/j.TargetFileSize))
		for i := 0; i < nOut; i++ {
			lo, hi := i*len(rows)/nOut, (i+1)*len(rows)/nOut
			tags := map[string]string{}
			for k, v := range j.Tags {
				tags[k] = v
			}
			t.addFile(slices.Clone(rows[lo:hi]), now, tags, j.ClusteringProvider)
		}
		t.rewritten += total
		t.bytesBy[j.Strategy] += total
	}
	t.version++
	return nil
}

// pruning returns, per clustering column, the average fraction of files
// whose [min, max] overlaps a random range predicate selecting 1% of the
// column's value range.
func (t *table) pruning(rng *rand.Rand) []float64 {
	out := make([]float64, len(columnNames))
	if len(t.files) == 0 {
		return out
	}
	type span struct{ lo, hi int64 }
	spans := make([][]span, len(columnNames))
	for c := range columnNames {
		gl, gh := int64(1<<62), int64(-1<<62)
		for _, f := range t.files {
			lo, _ := strconv.ParseInt(string(f.add.ParsedStats.MinValues[columnNames[c]].(json.Number)), 10, 64)
			hi, _ := strconv.ParseInt(string(f.add.ParsedStats.MaxValues[columnNames[c]].(json.Number)), 10, 64)
			spans[c] = append(spans[c], span{lo, hi})
			gl, gh = min(gl, lo), max(gh, hi)
		}
		width := (gh - gl) / 100
		var sum float64
		for q := 0; q < t.cfg.queries; q++ {
			start := gl
			if gh-gl-width > 0 {
				start += rng.Int64N(gh - gl - width)
			}
			end := start + width
			hit := 0
			for _, s := range spans[c] {
				if s.lo <= end && s.hi >= start {
					hit++
				}
			}
			sum += float64(hit) / float64(len(spans[c]))
		}
		out[c] = sum / float64(t.cfg.queries)
	}
	return out
}

// result is one strategy's outcome.
type result struct {
	name           string
	runs           int
	files          int
	ingested       int64
	rewritten      int64
	pruning        []float64 // averaged over measurements
	final          []float64
	jobs           map[planner.Strategy]int
	bytesBy        map[planner.Strategy]int64
	elapsed        time.Duration
	largestRewrite int64
}

func simulate(name string, strategy planner.Strategy, cfg config) (result, error) {
	start := time.Now()
	t := newTable(cfg)
	rng := rand.New(rand.NewPCG(cfg.seed, 1))
	qrng := rand.New(rand.NewPCG(cfg.seed, 2))
	pol := planner.Policy{
		Strategy:            strategy,
		TargetFileSize:      cfg.target,
		MinFileSize:         cfg.minFile,
		MaxUnclusteredBytes: cfg.maxUnclustered,
		MinCubeSize:         cfg.minCube,
		CubeMergeMinCubes:   cfg.cubeMergeMin,
	}
	res := result{name: name, pruning: make([]float64, len(columnNames))}
	measured := 0
	// The daemon row: policies.DefaultPolicy at the bench's sizes.
	daemonPolicy := policies.DefaultPolicy()
	daemonPolicy.TargetFileSize, daemonPolicy.MinFileSize = cfg.target, cfg.minFile
	var lastRun time.Time
	const minute = int64(60_000)
	for b := 0; b < cfg.batches; b++ {
		rows := make([]row, cfg.batchRows)
		for i := range rows {
			ts := int64(b)*minute + rng.Int64N(minute)
			if rng.Float64() < cfg.lateFraction {
				ts -= rng.Int64N(int64(cfg.lateBatches)) * minute
			}
			rows[i] = row{ts: ts, key: rng.Int64N(1_000_000_000)}
		}
		now := int64(b) * minute
		t.addFile(rows, now, nil, "")
		t.ingested += int64(len(rows)) * cfg.rowBytes
		t.version++
		if cfg.daemon {
			// The daemon's default policy and triggers, through the
			// scheduler's own backlog and trigger code: a poll after
			// every batch, a run when a trigger fires.
			pol.SettleWindow = daemonPolicy.SettleWindow
			if (b+1)%(cfg.every*cfg.measureEvery) == 0 {
				for c, v := range t.pruning(qrng) {
					res.pruning[c] += v
				}
				measured++
			}
			at := time.UnixMilli(now)
			bl, err := runner.ComputeBacklog(t.snapshot(), daemonPolicy, at)
			if err != nil {
				return res, fmt.Errorf("%s: batch %d: %w", name, b, err)
			}
			if scheduler.Evaluate(scheduler.Triggers(daemonPolicy.Triggers), bl, lastRun, at) == "" {
				continue
			}
			lastRun = at
		} else if (b+1)%cfg.every != 0 {
			continue
		}
		pol.Now = time.UnixMilli(now)
		before := t.rewritten
		pl, err := planner.Plan(t.snapshot(), pol)
		if err != nil {
			return res, fmt.Errorf("%s: batch %d: %w", name, b, err)
		}
		if err := t.apply(pl, now); err != nil {
			return res, fmt.Errorf("%s: batch %d: %w", name, b, err)
		}
		res.largestRewrite = max(res.largestRewrite, t.rewritten-before)
		res.runs++
		if !cfg.daemon && res.runs%cfg.measureEvery == 0 {
			for c, v := range t.pruning(qrng) {
				res.pruning[c] += v
			}
			measured++
		}
	}
	for c := range res.pruning {
		if measured > 0 {
			res.pruning[c] /= float64(measured)
		}
	}
	res.final = t.pruning(qrng)
	res.files, res.ingested, res.rewritten, res.jobs, res.bytesBy = len(t.files), t.ingested, t.rewritten, t.jobs, t.bytesBy
	res.elapsed = time.Since(start)
	return res, nil
}

func avg(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func main() {
	var cfg config
	flag.IntVar(&cfg.batches, "batches", 6000, "ingest batches")
	flag.IntVar(&cfg.batchRows, "batch-rows", 100, "rows per batch")
	flag.IntVar(&cfg.every, "every", 10, "run the policy after every k batches")
	flag.Int64Var(&cfg.rowBytes, "row-bytes", 100, "bytes per row (file size = rows x this)")
	flag.Int64Var(&cfg.target, "target", 128<<10, "target file size in bytes (Delta: 1 GiB)")
	flag.Int64Var(&cfg.maxUnclustered, "max-unclustered", 0, "lightweight tier threshold in bytes (0 = 10 x target, Delta's 10 GiB : 1 GiB)")
	flag.Int64Var(&cfg.minCube, "min-cube", 0, "min cube size in bytes (0 = 100 x target, Delta's 100 GiB : 1 GiB)")
	flag.Float64Var(&cfg.lateFraction, "late", 0.05, "fraction of rows arriving late")
	flag.IntVar(&cfg.lateBatches, "late-batches", 60, "how many batches late a late row can be")
	flag.IntVar(&cfg.queries, "queries", 100, "random range predicates per column per measurement")
	flag.IntVar(&cfg.measureEvery, "measure-every", 5, "measure pruning after every n policy runs")
	flag.IntVar(&cfg.rangeBuckets, "range-buckets", 1000, "range ids per column (Delta: rangeId.max 1000)")
	flag.Uint64Var(&cfg.seed, "seed", 1, "random seed")
	flag.Int64Var(&cfg.minFile, "min-file", 0, "min file size: smaller files are compaction candidates (0 = target, as Delta's minFileSize = maxFileSize)")
	flag.BoolVar(&cfg.equalBuckets, "equal-buckets", false, "ignore the plan's per-column bucket counts: every column gets range-buckets (Delta's layout)")
	flag.IntVar(&cfg.cubeMergeMin, "cube-merge-min", planner.DefaultCubeMergeMinCubes, "planner CubeMergeMinCubes: partial cubes of a size tier merge once this many exist (negative = Delta: merge every partial cube)")
	flag.StringVar(&cfg.sweep, "sweep", "1,2,5,10,20,daemon", "policy intervals (batches per run) to rerun binpack, zcube and auto at, for the goal per interval, and \"daemon\" (a poll after every batch, a run when a trigger of the default policy fires, judged by the scheduler's own code); empty: none")
	flag.StringVar(&cfg.strategies, "strategies", "binpack,lightweight,zcube,auto", "strategies to simulate (comma-separated)")
	flag.Parse()
	if cfg.maxUnclustered == 0 {
		cfg.maxUnclustered = 10 * cfg.target
	}
	if cfg.minFile == 0 {
		cfg.minFile = cfg.target
	}
	if cfg.minCube == 0 {
		cfg.minCube = 100 * cfg.target
	}
	if err := run(cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "clustering bench:", err)
		os.Exit(1)
	}
}

func run(cfg config, w io.Writer) error {
	fmt.Fprintf(w, "ingest: %d batches x %d rows x %d B = %d MiB; policy every %d batches; target %d KiB, min file %d KiB, max unclustered %d KiB, min cube %d KiB, cube merge min cubes %d; %.0f%% rows up to %d batches late\n\n",
		cfg.batches, cfg.batchRows, cfg.rowBytes, int64(cfg.batches*cfg.batchRows)*cfg.rowBytes>>20, cfg.every,
		cfg.target>>10, cfg.minFile>>10, cfg.maxUnclustered>>10, cfg.minCube>>10, cfg.cubeMergeMin, cfg.lateFraction*100, cfg.lateBatches)
	var results []result
	byName := map[string]result{}
	for _, s := range []struct {
		key, name string
		st        planner.Strategy
	}{
		{"binpack", "binpack only", planner.StrategyBinpack},
		{"lightweight", "lightweight only", planner.StrategyLightweight},
		{"zcube", "zcube every run", planner.StrategyZCube},
		{"auto", "auto", planner.StrategyAuto},
	} {
		if !slices.Contains(strings.Split(cfg.strategies, ","), s.key) {
			continue
		}
		r, err := simulate(s.name, s.st, cfg)
		if err != nil {
			return err
		}
		results = append(results, r)
		byName[s.key] = r
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\truns\tfiles\tingested MiB\trewritten MiB\twrite amp\tprune ts\tprune key\tprune avg\tfinal avg\tmax run MiB\tjobs (rewritten)\ttime\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.1f\t%.2f\t%.3f\t%.3f\t%.3f\t%.3f\t%.1f\t%v\t%s\t\n",
			r.name, r.runs, r.files, float64(r.ingested)/(1<<20), float64(r.rewritten)/(1<<20),
			float64(r.rewritten)/float64(r.ingested), r.pruning[0], r.pruning[1], avg(r.pruning), avg(r.final),
			float64(r.largestRewrite)/(1<<20), jobsText(r), r.elapsed.Round(time.Millisecond))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	bp, ok1 := byName["binpack"]
	zc, ok2 := byName["zcube"]
	au, ok3 := byName["auto"]
	if !ok1 || !ok2 || !ok3 {
		return nil
	}
	g := goalOf(bp, zc, au)
	fmt.Fprintf(w, "\nprune = average fraction of files a 1%%-selectivity range predicate cannot skip (lower is better), averaged over measurements\n")
	fmt.Fprintf(w, "goal: auto write amp <= 1.5 x binpack: %.2f x (%s); auto pruning <= 1.3 x zcube-every-run: %.2f x (%s)\n",
		g.wa, verdict(g.wa <= 1.5), g.prune, verdict(g.prune <= 1.3))
	if cfg.sweep == "" {
		return nil
	}
	return sweep(cfg, w)
}

// jobsText lists, per strategy, the jobs run and the MiB they rewrote.
func jobsText(r result) string {
	var parts []string
	for _, st := range []planner.Strategy{planner.StrategyBinpack, planner.StrategyLightweight, planner.StrategyZCube} {
		if n := r.jobs[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d (%.1f MiB)", st, n, float64(r.bytesBy[st])/(1<<20)))
		}
	}
	return strings.Join(parts, ", ")
}

// goal is auto's write amplification relative to binpack's and its pruning
// relative to zcube-every-run's.
type goal struct{ wa, prune float64 }

func goalOf(bp, zc, au result) goal {
	return goal{
		wa:    (float64(au.rewritten) / float64(au.ingested)) / (float64(bp.rewritten) / float64(bp.ingested)),
		prune: avg(au.pruning) / avg(zc.pruning),
	}
}

// sweep reruns binpack, zcube-every-run and auto for each policy interval
// k in cfg.sweep (batches per run), measuring pruning at the same batch
// counts, and prints the goal for each: how often the policy runs decides
// how much binpack rewrites, and so the write-amplification budget.
func sweep(cfg config, w io.Writer) error {
	fmt.Fprintf(w, "\nsweep over the policy interval (pruning measured every %d batches):\n", cfg.every*cfg.measureEvery)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "runs\tbinpack WA\tzcube WA\tzcube prune\tauto WA\tauto prune\tauto files\tWA / binpack\tprune / zcube\tgoal\t")
	for _, f := range strings.Split(cfg.sweep, ",") {
		f = strings.TrimSpace(f)
		c := cfg
		label := f
		if f == "daemon" {
			// Polled after every batch; runs when the small_files trigger
			// fires; the planner keeps the settle window.
			c.daemon, c.every, c.measureEvery = true, 1, cfg.every*cfg.measureEvery
		} else {
			k, err := strconv.Atoi(f)
			if err != nil || k < 1 {
				return fmt.Errorf("sweep: bad interval %q (want a number of batches or \"daemon\")", f)
			}
			c.every, c.measureEvery = k, max(1, cfg.every*cfg.measureEvery/k)
		}
		var rs [3]result
		for i, st := range []planner.Strategy{planner.StrategyBinpack, planner.StrategyZCube, planner.StrategyAuto} {
			r, err := simulate(string(st), st, c)
			if err != nil {
				return err
			}
			rs[i] = r
		}
		g := goalOf(rs[0], rs[1], rs[2])
		wa := func(r result) float64 { return float64(r.rewritten) / float64(r.ingested) }
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.3f\t%.2f\t%.3f\t%d\t%.2f\t%.2f\t%s\t\n", label, wa(rs[0]), wa(rs[1]), avg(rs[1].pruning),
			wa(rs[2]), avg(rs[2].pruning), rs[2].files, g.wa, g.prune, verdict(g.wa <= 1.5 && g.prune <= 1.3))
	}
	return tw.Flush()
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}
