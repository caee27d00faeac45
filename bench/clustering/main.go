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
	"math"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/predicate"
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
	cubeBytes int64 // bytes of Z-cube files that zcube jobs rewrote (merges)
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
		i int // position in rows: ties keep source order
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
		ks[i] = keyed{k, i, r}
	}
	slices.SortFunc(ks, func(a, b keyed) int { return cmp.Or(cmp.Compare(a.k, b.k), cmp.Compare(a.i, b.i)) })
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
			if j.Sort != nil && src.Tags[planner.TagZCubeID] != "" {
				t.cubeBytes += src.Size
			}
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

// pruneStat is one pruning measurement of one clustering column: the
// average fraction of the table's files, and the average number of files,
// that a range predicate on the column cannot skip.
type pruneStat struct {
	frac, files float64
}

// pruning measures, per clustering column, t.cfg.queries range predicates
// `lo <= col AND col <= hi` that each select 1% of the column's value range
// (the range of the table's files' stats), drawn from rng. A file is read
// when predicate.MayMatch, a reader's data skipping, cannot rule it out
// from the min/max in the file's add action.
func (t *table) pruning(rng *rand.Rand) ([]pruneStat, error) {
	out := make([]pruneStat, len(columnNames))
	if len(t.files) == 0 {
		return out, nil
	}
	files := make([]*file, 0, len(t.files))
	for _, f := range t.files {
		files = append(files, f)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].add.Path < files[j].add.Path })
	fs := make([]predicate.FileStats, len(files))
	for c, name := range columnNames {
		col := predicate.Column{Path: []string{name}, Kind: predicate.KindInt}
		gl, gh := int64(math.MaxInt64), int64(math.MinInt64)
		for i, f := range files {
			cs, err := predicate.DeltaStats{Stats: f.add.ParsedStats}.Column(col)
			if err != nil {
				return nil, fmt.Errorf("file %s: %w", f.add.Path, err)
			}
			if cs.Min == nil || cs.Max == nil {
				return nil, fmt.Errorf("file %s: no min/max of %s", f.add.Path, name)
			}
			fs[i] = parsedStats{col: name, cs: cs}
			gl, gh = min(gl, cs.Min.I), max(gh, cs.Max.I)
		}
		width := (gh - gl) / 100
		var sum float64
		for q := 0; q < t.cfg.queries; q++ {
			start := gl
			if gh-gl-width > 0 {
				start += rng.Int64N(gh - gl - width)
			}
			e := predicate.And{
				predicate.Cmp{Col: col, Op: predicate.OpGe, Value: predicate.Int(start)},
				predicate.Cmp{Col: col, Op: predicate.OpLe, Value: predicate.Int(start + width)},
			}
			hit := 0
			for i := range fs {
				ok, err := predicate.MayMatch(e, fs[i])
				if err != nil {
					return nil, fmt.Errorf("file %s: %w", files[i].add.Path, err)
				}
				if ok {
					hit++
				}
			}
			sum += float64(hit)
		}
		out[c].files = sum / float64(t.cfg.queries)
		out[c].frac = out[c].files / float64(len(files))
	}
	return out, nil
}

// parsedStats is one column's statistics of a file, parsed once from its
// add action for the many predicates a measurement evaluates.
type parsedStats struct {
	col string
	cs  predicate.ColumnStats
}

func (p parsedStats) NumRecords() (int64, bool) { return 0, false }

func (p parsedStats) Column(c predicate.Column) (predicate.ColumnStats, error) {
	if len(c.Path) != 1 || c.Path[0] != p.col {
		return predicate.ColumnStats{}, nil
	}
	return p.cs, nil
}

// result is one strategy's outcome.
type result struct {
	name           string
	runs           int
	files          int
	ingested       int64
	rewritten      int64
	cubeBytes      int64
	pruning        []pruneStat // averaged over the measurements in the stream
	final          []pruneStat // after the last batch, the fixed predicate set
	jobs           map[planner.Strategy]int
	bytesBy        map[planner.Strategy]int64
	elapsed        time.Duration
	largestRewrite int64
}

// wa is the write amplification: bytes rewritten by compaction over bytes
// ingested.
func (r result) wa() float64 { return float64(r.rewritten) / float64(r.ingested) }

// arm is one simulated way of running the policy.
type arm struct {
	key, name string
	st        planner.Strategy
	full      bool // re-cluster every file on every run (OPTIMIZE FULL)
}

// arms are the simulated arms, in the order they are printed.
func arms() []arm {
	return []arm{
		{"binpack", "binpack only", planner.StrategyBinpack, false},
		{"lightweight", "lightweight only", planner.StrategyLightweight, false},
		{"zcube", "zcube every run", planner.StrategyZCube, false},
		{"full", "re-cluster every run", planner.StrategyZCube, true},
		{"auto", "auto", planner.StrategyAuto, false},
	}
}

func armOf(key string) arm {
	for _, a := range arms() {
		if a.key == key {
			return a
		}
	}
	return arm{}
}

func addPruning(sum []pruneStat, ps []pruneStat) {
	for c, v := range ps {
		sum[c].frac += v.frac
		sum[c].files += v.files
	}
}

func simulate(a arm, cfg config) (result, error) {
	name := a.name
	start := time.Now()
	t := newTable(cfg)
	rng := rand.New(rand.NewPCG(cfg.seed, 1))
	qrng := rand.New(rand.NewPCG(cfg.seed, 2))
	pol := planner.Policy{
		Strategy:            a.st,
		Full:                a.full,
		TargetFileSize:      cfg.target,
		MinFileSize:         cfg.minFile,
		MaxUnclusteredBytes: cfg.maxUnclustered,
		MinCubeSize:         cfg.minCube,
		CubeMergeMinCubes:   cfg.cubeMergeMin,
	}
	res := result{name: name, pruning: make([]pruneStat, len(columnNames))}
	measured := 0
	measure := func() error {
		ps, err := t.pruning(qrng)
		if err != nil {
			return fmt.Errorf("%s: pruning: %w", name, err)
		}
		addPruning(res.pruning, ps)
		measured++
		return nil
	}
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
				if err := measure(); err != nil {
					return res, err
				}
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
			if err := measure(); err != nil {
				return res, err
			}
		}
	}
	for c := range res.pruning {
		if measured > 0 {
			res.pruning[c].frac /= float64(measured)
			res.pruning[c].files /= float64(measured)
		}
	}
	// After the last batch: one fixed set of predicates, the same for
	// every arm (every arm holds the same rows, so the same value ranges).
	final, err := t.pruning(rand.New(rand.NewPCG(cfg.seed, 3)))
	if err != nil {
		return res, fmt.Errorf("%s: pruning: %w", name, err)
	}
	res.final = final
	res.files, res.ingested, res.rewritten, res.cubeBytes, res.jobs, res.bytesBy = len(t.files), t.ingested, t.rewritten, t.cubeBytes, t.jobs, t.bytesBy
	res.elapsed = time.Since(start)
	return res, nil
}

// filesRead is the number of files a predicate reads, averaged over the
// clustering columns' predicates.
func filesRead(ps []pruneStat) float64 {
	var s float64
	for _, p := range ps {
		s += p.files
	}
	return s / float64(len(ps))
}

// fracRead is the fraction of the table's files a predicate reads, averaged
// over the clustering columns' predicates.
func fracRead(ps []pruneStat) float64 {
	var s float64
	for _, p := range ps {
		s += p.frac
	}
	return s / float64(len(ps))
}

// The goals of issue 33: auto's write amplification at most waGoal x
// binpack's, its pruning (files read) within pruneGoal x re-clustering
// every run's.
const (
	waGoal    = 2.5
	pruneGoal = 1.3
)

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
	flag.IntVar(&cfg.cubeMergeMin, "cube-merge-min", planner.DefaultCubeMergeMinCubes, "planner CubeMergeMinCubes: adjacent partial cubes one merge takes, merges happening while a partition holds more than 2 x sqrt(its files) partial cubes (negative = Delta: merge every partial cube)")
	flag.StringVar(&cfg.sweep, "sweep", "1,2,5,10,20,daemon", "policy intervals (batches per run) to rerun binpack, zcube and auto at, for the goal per interval, and \"daemon\" (a poll after every batch, a run when a trigger of the default policy fires, judged by the scheduler's own code); empty: none")
	flag.StringVar(&cfg.strategies, "strategies", "binpack,lightweight,zcube,full,auto", "arms to simulate (comma-separated): binpack, lightweight, zcube (incremental, every run), full (re-cluster every file every run), auto")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile to this `file`")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "clustering bench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
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
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(cfg config, w io.Writer) error {
	fmt.Fprintf(w, "ingest: %d batches x %d rows x %d B = %.1f MiB; policy every %d batches; target %d KiB, min file %d KiB, max unclustered %d KiB, min cube %d KiB, cube merge min cubes %d; %.0f%% rows up to %d batches late; %d predicates per column per measurement\n\n",
		cfg.batches, cfg.batchRows, cfg.rowBytes, float64(int64(cfg.batches*cfg.batchRows)*cfg.rowBytes)/(1<<20), cfg.every,
		cfg.target>>10, cfg.minFile>>10, cfg.maxUnclustered>>10, cfg.minCube>>10, cfg.cubeMergeMin, cfg.lateFraction*100, cfg.lateBatches, cfg.queries)
	var results []result
	byKey := map[string]result{}
	for _, a := range arms() {
		if !slices.Contains(strings.Split(cfg.strategies, ","), a.key) {
			continue
		}
		r, err := simulate(a, cfg)
		if err != nil {
			return err
		}
		results = append(results, r)
		byKey[a.key] = r
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\truns\tfiles\tingested MiB\trewritten MiB\twrite amp\tread ts\tread key\tread avg\tfrac avg\tfinal read ts\tfinal read key\tfinal read avg\tfinal frac avg\tmax run MiB\tjobs (rewritten)\ttime\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.1f\t%.2f\t%.1f\t%.1f\t%.1f\t%.3f\t%.1f\t%.1f\t%.1f\t%.3f\t%.1f\t%v\t%s\t\n",
			r.name, r.runs, r.files, float64(r.ingested)/(1<<20), float64(r.rewritten)/(1<<20), r.wa(),
			r.pruning[0].files, r.pruning[1].files, filesRead(r.pruning), fracRead(r.pruning),
			r.final[0].files, r.final[1].files, filesRead(r.final), fracRead(r.final),
			float64(r.largestRewrite)/(1<<20), jobsText(r), r.elapsed.Round(time.Millisecond))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nread = files a 1%%-selectivity range predicate on the column reads (not skipped by the min/max in its add action; lower is better), averaged over the measurements in the stream (every %d batches); final = after the last batch, one fixed set of predicates for every arm; frac = read / files\n", cfg.every*cfg.measureEvery)
	bp, okB := byKey["binpack"]
	au, okA := byKey["auto"]
	if okB && okA {
		fmt.Fprintf(w, "goal: auto write amp <= %.1f x binpack: %.2f x (%s)\n", waGoal, au.wa()/bp.wa(), verdict(au.wa()/bp.wa() <= waGoal))
		for _, ideal := range []string{"full", "zcube"} {
			id, ok := byKey[ideal]
			if !ok {
				continue
			}
			fin, str := filesRead(au.final)/filesRead(id.final), filesRead(au.pruning)/filesRead(id.pruning)
			fmt.Fprintf(w, "goal: auto files read <= %.1f x %s: after the last batch %.2f x (%s), over the stream %.2f x (%s); fraction of files read %.2f x / %.2f x\n",
				pruneGoal, id.name, fin, verdict(fin <= pruneGoal), str, verdict(str <= pruneGoal),
				fracRead(au.final)/fracRead(id.final), fracRead(au.pruning)/fracRead(id.pruning))
		}
	}
	if cfg.sweep == "" {
		return nil
	}
	return sweep(cfg, w)
}

// jobsText lists, per strategy, the jobs run and the MiB they rewrote.
func jobsText(r result) string {
	var parts []string
	for _, st := range []planner.Strategy{planner.StrategyBinpack, planner.StrategyLightweight, planner.StrategyZCube} {
		n := r.jobs[st]
		if n == 0 {
			continue
		}
		text := fmt.Sprintf("%s %d (%.1f MiB", st, n, float64(r.bytesBy[st])/(1<<20))
		if st == planner.StrategyZCube {
			text += fmt.Sprintf(", %.1f of it Z-cube files merged", float64(r.cubeBytes)/(1<<20))
		}
		parts = append(parts, text+")")
	}
	return strings.Join(parts, ", ")
}

// sweep reruns binpack, zcube-every-run and auto for each policy interval
// k in cfg.sweep (batches per run), measuring pruning at the same batch
// counts, and prints the goal for each: how often the policy runs decides
// how much binpack rewrites, and so the write-amplification budget.
// Re-clustering every run is left out (at k = 1 it rewrites the table on
// every batch); the sweep's pruning yardstick is zcube every run.
func sweep(cfg config, w io.Writer) error {
	fmt.Fprintf(w, "\nsweep over the policy interval (pruning measured every %d batches; files read after the last batch):\n", cfg.every*cfg.measureEvery)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "runs\tbinpack WA\tzcube WA\tzcube read\tauto WA\tauto read\tauto files\tWA / binpack\tread / zcube\tgoal\t")
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
		for i, key := range []string{"binpack", "zcube", "auto"} {
			r, err := simulate(armOf(key), c)
			if err != nil {
				return err
			}
			rs[i] = r
		}
		waR, readR := rs[2].wa()/rs[0].wa(), filesRead(rs[2].final)/filesRead(rs[1].final)
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.1f\t%.2f\t%.1f\t%d\t%.2f\t%.2f\t%s\t\n", label, rs[0].wa(), rs[1].wa(), filesRead(rs[1].final),
			rs[2].wa(), filesRead(rs[2].final), rs[2].files, waR, readR, verdict(waR <= waGoal && readR <= pruneGoal))
	}
	return tw.Flush()
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}
