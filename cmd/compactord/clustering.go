package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/compactord/compactord/clusteradvise"
	"github.com/compactord/compactord/internal/units"
	"github.com/compactord/compactord/planner"
)

// runPredicates records pushed predicates in a table's clustering
// evidence: `compactord predicates add URL FILE` (FILE "-" is stdin), JSON
// lines {"predicate": "<Spark SQL boolean expression>", "weight": n,
// "time": "<RFC 3339>"}.
func runPredicates(ctx context.Context, cf *commandFlags, args []string, stdout, stderr io.Writer) error {
	store := cf.addStoreFlags(stderr)
	pos, err := cf.parseSubcommand(args, "add", 2, "add, a table URL and a file of JSON lines (- for stdin)")
	if err != nil {
		return err
	}
	ctx = store.run(ctx)
	url, file := pos[1], pos[2]
	var in io.Reader = os.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	now := time.Now().UTC()
	batch, err := clusteradvise.ReadPushed(in, now)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	t, err := store.open(ctx, url)
	if err != nil {
		return err
	}
	defer t.Close()
	rec, err := clusteradvise.RecordPushed(ctx, t, batch, now)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s recorded in %s of %s (%s kept, %.1f a day)\n",
		plural(len(batch), "predicate"), clusteradvise.Key, t.Name(), plural(len(rec.Entries), "distinct predicate"), rec.RatePerDay())
	return nil
}

// runClustering prints the clustering advice of a table:
// `compactord clustering advise URL`: the evidence (stored, plus the DML
// commits since it was last gathered), each candidate key's estimate and
// the verdict the daemon would reach. It changes nothing.
func runClustering(ctx context.Context, cf *commandFlags, args []string, stdout, stderr io.Writer) error {
	asJSON := cf.Bool("json", false, "print the advice as JSON")
	target := cf.String("target-file-size", "", "file `size` of the simulated layout (default: the table's delta.targetFileSize, else 128 MiB)")
	sampleRows := cf.Int("sample-rows", clusteradvise.DefaultSampleRows, "rows of the table's values to sample")
	opts := clusteradvise.DefaultOptions()
	cf.durationVar(&opts.Horizon, "horizon", opts.Horizon, "time over which a re-clustering is amortised")
	cf.Float64Var(&opts.Margin, "margin", opts.Margin, "fraction fewer bytes a new key must read than the current key")
	cf.Float64Var(&opts.MinGain, "min-gain", opts.MinGain, "fraction fewer bytes than the current layout a key must read")
	minTable := cf.String("min-table-size", units.FormatBytes(opts.MinTableBytes), "table `size` under which no key is chosen")
	store := cf.addStoreFlags(stderr)
	pos, err := cf.parseSubcommand(args, "advise", 1, "advise and a table URL")
	if err != nil {
		return err
	}
	if opts.MinTableBytes, err = units.ParseSize(*minTable); err != nil {
		return fmt.Errorf("%w: --min-table-size: %v", errUsage, err)
	}
	if *sampleRows <= 0 {
		return fmt.Errorf("%w: --sample-rows must be positive", errUsage)
	}
	ctx = store.run(ctx)
	t, snap, err := openSnapshot(ctx, store, pos[1], -1)
	if err != nil {
		return err
	}
	defer t.Close()
	size := int64(0)
	if *target != "" {
		if size, err = units.ParseSize(*target); err != nil {
			return fmt.Errorf("%w: --target-file-size: %v", errUsage, err)
		}
	}
	if size, err = planner.TargetFileSize(size, snap.Properties()); err != nil {
		return fmt.Errorf("table %s: %w", t.Name(), err)
	}
	now := time.Now().UTC()
	rep, err := clusteradvise.AdviseNow(ctx, t, snap, now, size, *sampleRows, opts)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSONTo(stdout, rep)
	}
	return rep.WriteText(stdout)
}
