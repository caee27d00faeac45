// Command rewritebench measures one rewrite of a Delta table's live files
// for bench/rewrite.sh and prints one JSON line: mode, seconds, input and
// output bytes, rows, MB/s (input MiB per second) and peak RSS (getrusage).
//
// Modes:
//   - compactord: writer.RewriteAll over bins of the table's files (each bin
//     up to the target size), nothing committed, outputs deleted afterwards
//     unless -keep; with -sort COLS every bin is a sorted (Z-cube) job on
//     those columns (-nocopy sends it through the external row sort); with
//     -plan STRATEGY the jobs are the planner's instead (every file below
//     the target a candidate, -sort naming the clustering columns): -plan
//     lightweight is the lightweight tier, its sources in the (min, max)
//     order of one column (-lightweight-column), rows not sorted;
//   - parquetgo: a bare parquet-go loop (open each file, read rows, write one
//     zstd file per target size) with no Delta logic, the floor to compare
//     against.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/planner"
	"github.com/compactord/compactord/writer"
)

type report struct {
	Mode       string  `json:"mode"`
	Seconds    float64 `json:"seconds"`
	BytesIn    int64   `json:"bytesIn"`
	BytesOut   int64   `json:"bytesOut"`
	Rows       int64   `json:"rows"`
	Outputs    int     `json:"outputs"`
	MBps       float64 `json:"mbps"`
	PeakRSSMiB float64 `json:"peakRssMiB"`
	CopiedRG   int     `json:"copiedRowGroups,omitempty"`
	// Sorted jobs: whether they took the column path, spilled chunks.
	Columnar bool `json:"columnar,omitempty"`
	Spills   int  `json:"spills,omitempty"`
	// Planned rewrites (-plan): the jobs and the column the lightweight
	// tier ordered files by.
	Jobs      int    `json:"jobs,omitempty"`
	OrderedBy string `json:"orderedBy,omitempty"`
}

func main() {
	mode := flag.String("mode", "compactord", "compactord | parquetgo")
	table := flag.String("table", "", "table directory")
	out := flag.String("out", "", "output directory (parquetgo mode)")
	target := flag.Int64("target", 0, "target file size in bytes (0: default)")
	jobs := flag.Int("jobs", 0, "max concurrent jobs (0: default)")
	noCopy := flag.Bool("nocopy", false, "disable the page-copy fast path")
	rowGroup := flag.Int64("rowgroup", 0, "row group bytes (0: default)")
	readBuf := flag.Int("readbuf", 0, "read buffer bytes per column (0: default)")
	spill := flag.String("spill", "", "spill row-group pages to this directory")
	keep := flag.Bool("keep", false, "keep compactord outputs (print their keys on stderr)")
	verbose := flag.Bool("v", false, "log at debug level")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile here")
	memProfile := flag.String("memprofile", "", "write an allocation profile here")
	heapProfile := flag.String("heapprofile", "", "write the in-use heap profile at the peak heap size seen here")
	traceFile := flag.String("trace", "", "write an execution trace here (go tool trace)")
	sortCols := flag.String("sort", "", "comma-separated clustering columns: a sorted (Z-cube) rewrite on them")
	curveName := flag.String("curve", "hilbert", "curve of a sorted rewrite (hilbert or zorder)")
	sortMem := flag.Int("sortmem", 0, "memory bound of the external row sort in bytes (0: default)")
	colMem := flag.Int("colmem", 0, "memory bound of the column path of a sorted rewrite in bytes (0: default)")
	planStrategy := flag.String("plan", "", "plan the jobs with the planner's strategy (lightweight, binpack, zcube) on the -sort columns instead of bins in file order")
	lightweightCol := flag.String("lightweight-column", "", "with -plan lightweight: the column the tier orders files by (default: the planner's pick)")
	flag.Parse()
	if *traceFile != "" {
		startOrExit(*traceFile, trace.Start)
		defer trace.Stop()
	}
	if *heapProfile != "" {
		go watchHeap(*heapProfile)
	}
	if *cpuProfile != "" {
		startOrExit(*cpuProfile, pprof.StartCPUProfile)
		defer pprof.StopCPUProfile()
	}
	if *table == "" {
		fmt.Fprintln(os.Stderr, "rewritebench: -table is required")
		os.Exit(2)
	}
	ctx := context.Background()
	var r report
	var err error
	switch *mode {
	case "compactord":
		opts := writer.DefaultOptions()
		opts.TargetFileSize = *target
		if *jobs > 0 {
			opts.MaxConcurrentJobs = *jobs
		}
		if *rowGroup > 0 {
			opts.RowGroupBytes = *rowGroup
		}
		if *readBuf > 0 {
			opts.ReadBufferSize = *readBuf
		}
		opts.DisableCopyPath = *noCopy
		opts.Sort.MemoryBytes = *sortMem
		opts.Sort.ColumnMemoryBytes = *colMem
		opts.SpillDir = *spill
		if *verbose {
			opts.Logger = hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: os.Stderr})
		}
		var spec *writer.SortSpec
		if *sortCols != "" {
			spec = &writer.SortSpec{Curve: *curveName}
			for _, c := range strings.Split(*sortCols, ",") {
				spec.Columns = append(spec.Columns, strings.Split(c, "."))
			}
		}
		var pick planJobs
		if *planStrategy != "" {
			pick = func(snap *delta.Snapshot, target int64) ([]*writer.Job, string, error) {
				var cols [][]string
				if spec != nil {
					cols = spec.Columns
				}
				var lw []string
				if *lightweightCol != "" {
					lw = strings.Split(*lightweightCol, ".")
				}
				js, pl, err := plannedJobs(snap, planner.Strategy(*planStrategy), cols, lw, target)
				if err != nil || pl.Lightweight == nil {
					return js, "", err
				}
				return js, pl.Lightweight.Column, nil
			}
		}
		r, err = runCompactord(ctx, *table, opts, spec, pick, *keep)
	case "parquetgo":
		r, err = runParquetGo(*table, *out, *target)
	default:
		err = fmt.Errorf("unknown mode %q", *mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rewritebench:", err)
		pprof.StopCPUProfile()
		trace.Stop()
		os.Exit(1)
	}
	if *memProfile != "" {
		if f, err := os.Create(*memProfile); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(f, 0)
			_ = f.Close()
		}
	}
	r.Mode = *mode
	r.MBps = float64(r.BytesIn) / (1 << 20) / r.Seconds
	r.PeakRSSMiB = peakRSSMiB()
	_ = json.NewEncoder(os.Stdout).Encode(r)
}

// startOrExit creates path and starts a profile or trace writing to it.
func startOrExit(path string, start func(io.Writer) error) {
	f, err := os.Create(path)
	if err == nil {
		err = start(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rewritebench:", err)
		os.Exit(1)
	}
}

func peakRSSMiB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return float64(ru.Maxrss) / 1024 // Linux reports KiB
}

// planJobs returns the jobs of a planned rewrite of snap and, for the
// lightweight tier, the column it ordered files by.
type planJobs func(snap *delta.Snapshot, target int64) ([]*writer.Job, string, error)

func runCompactord(ctx context.Context, dir string, opts writer.Options, spec *writer.SortSpec, pick planJobs, keep bool) (report, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return report{}, err
	}
	t, err := delta.OpenTable(ctx, "file://"+abs)
	if err != nil {
		return report{}, err
	}
	defer t.Close()
	snap, err := delta.LoadSnapshot(ctx, t, -1)
	if err != nil {
		return report{}, err
	}
	binSize := opts.TargetFileSize
	if binSize == 0 {
		binSize = writer.DefaultTargetFileSize
	}
	// Bin-pack in file order: one job per bin of about one output.
	var js []*writer.Job
	var cur *writer.Job
	var curSize int64
	for _, f := range snap.Files {
		if cur == nil || curSize+f.Size > binSize {
			cur = &writer.Job{ID: fmt.Sprintf("bin-%d", len(js)), Sort: spec}
			js = append(js, cur)
			curSize = 0
		}
		cur.Sources = append(cur.Sources, f)
		curSize += f.Size
	}
	var r report
	if pick != nil {
		if js, r.OrderedBy, err = pick(snap, binSize); err != nil {
			return report{}, err
		}
		r.Jobs = len(js)
	}
	start := time.Now()
	// The bench owns the attempt: without -keep it deletes what it wrote.
	objs := &attempt.Objects{}
	results, err := writer.RewriteAll(ctx, t, snap, js, objs, opts)
	secs := time.Since(start).Seconds()
	r.Seconds = secs
	for _, res := range results {
		if res == nil {
			continue
		}
		r.BytesIn += res.BytesRead
		r.BytesOut += res.BytesWritten
		r.Outputs += len(res.Outputs)
		r.CopiedRG += res.CopiedRowGroups
		if res.Sort != nil {
			r.Columnar = r.Columnar || res.Sort.Columnar
			r.Spills += res.Sort.Spills
		}
		_ = res.Origins.Close()
		for _, o := range res.Outputs {
			r.Rows += o.NumRecords
			if keep {
				fmt.Fprintln(os.Stderr, filepath.Join(abs, o.Key))
			}
		}
	}
	if !keep {
		_, cerr := objs.Clean(ctx, t.Bucket)
		err = errors.Join(err, cerr)
	}
	return r, err
}

func runParquetGo(dir, out string, target int64) (report, error) {
	if out == "" {
		return report{}, errors.New("-out is required in parquetgo mode")
	}
	if target == 0 {
		target = writer.DefaultTargetFileSize
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if err != nil {
		return report{}, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return report{}, err
	}
	var r report
	start := time.Now()
	var w *parquet.Writer
	var of *os.File
	var flushed int64
	closeOut := func() error {
		if w == nil {
			return nil
		}
		err := errors.Join(w.Close(), of.Close())
		fi, serr := os.Stat(of.Name())
		if serr == nil {
			r.BytesOut += fi.Size()
		}
		w = nil
		return errors.Join(err, serr)
	}
	rows := make([]parquet.Row, 1024)
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return r, err
		}
		fi, _ := f.Stat()
		r.BytesIn += fi.Size()
		pf, err := parquet.OpenFile(f, fi.Size())
		if err != nil {
			return r, fmt.Errorf("%s: %w", name, err)
		}
		if w != nil && w.Size() >= target {
			if err := closeOut(); err != nil {
				return r, err
			}
		}
		if w == nil {
			of, err = os.Create(filepath.Join(out, fmt.Sprintf("out-%05d.zstd.parquet", r.Outputs)))
			if err != nil {
				return r, err
			}
			r.Outputs++
			flushed = 0
			w = parquet.NewWriter(of, pf.Schema(), parquet.Compression(&parquet.Zstd),
				parquet.MaxRowsPerRowGroup(writer.DefaultRowGroupRows))
		}
		rr := parquet.NewReader(pf)
		for {
			n, err := rr.ReadRows(rows)
			if n > 0 {
				if _, werr := w.WriteRows(rows[:n]); werr != nil {
					return r, werr
				}
				// Same row-group bound as compactord's default.
				if w.Size()-flushed >= writer.DefaultRowGroupBytes {
					if ferr := w.Flush(); ferr != nil {
						return r, ferr
					}
					flushed = w.Size()
				}
				r.Rows += int64(n)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return r, fmt.Errorf("%s: %w", name, err)
			}
		}
		_ = rr.Close()
		_ = f.Close()
	}
	err = closeOut()
	r.Seconds = time.Since(start).Seconds()
	return r, err
}

// watchHeap writes an in-use heap profile each time the heap reaches a new
// peak (diagnosis of peak RSS).
func watchHeap(path string) {
	var peak uint64
	var ms runtime.MemStats
	for range time.Tick(100 * time.Millisecond) {
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse > peak+8<<20 {
			peak = ms.HeapInuse
			if f, err := os.Create(path); err == nil {
				_ = pprof.Lookup("heap").WriteTo(f, 0)
				_ = f.Close()
			}
			fmt.Fprintf(os.Stderr, "heap in use %d MiB, sys %d MiB\n", ms.HeapInuse>>20, ms.Sys>>20)
		}
	}
}
