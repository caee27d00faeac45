package statsbackfill

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/compactord/compactord/delta/scan"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/hashicorp/go-hclog"
	"github.com/parquet-go/parquet-go"
	"golang.org/x/sync/errgroup"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	deltaactions "github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/statscollect"
	"github.com/compactord/compactord/failure"
)

// Options configure one backfill. The zero value is usable.
type Options struct {
	// Concurrency bounds the files read at once (default 4).
	Concurrency int
	// MaxFiles bounds the files backfilled by one run (0: all).
	MaxFiles int
	// DryRun finds the files and computes nothing.
	DryRun bool
	// Exclude lists data file paths (as in add actions) not to read.
	Exclude map[string]bool
	// EngineInfo goes into commitInfo.engineInfo.
	EngineInfo string
	// Commit tunes the commit (Now, Logger default to this run's).
	Commit commit.Options
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives progress (default null).
	Logger hclog.Logger
	// Snapshots loads the latest snapshot (default delta.LoadSnapshot).
	Snapshots func(ctx context.Context, t *delta.Table, version int64) (*delta.Snapshot, error)
}

func (o Options) withDefaults() Options {
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Snapshots == nil {
		o.Snapshots = delta.LoadSnapshot
	}
	o.Commit = o.Commit.Inherit(o.Now, o.Logger, o.EngineInfo)
	return o
}

// Result is what one backfill did; `compactord backfill-stats --json`
// prints it.
type Result struct {
	// Table is the table URL; ReadVersion the snapshot read.
	Table       string `json:"table"`
	ReadVersion int64  `json:"readVersion"`
	// Candidates counts live files missing statistics (NoStats) or some
	// indexed columns (Partial).
	Candidates int `json:"candidates"`
	NoStats    int `json:"filesWithoutStats"`
	Partial    int `json:"filesWithPartialStats"`
	// Backfilled counts files re-added with new statistics; Rows their
	// physical rows.
	Backfilled int   `json:"filesBackfilled"`
	Rows       int64 `json:"rows"`
	// CommittedVersion is the COMPUTE STATS commit, -1 when none.
	CommittedVersion int64 `json:"committedVersion"`
	// Dropped counts computed files left out because a concurrent commit
	// changed them.
	Dropped int `json:"dropped"`
}

// maxAttempts bounds the commit attempts after concurrent changes.
const maxAttempts = 3

// Run backfills the statistics of t's live files (see the package doc).
func Run(ctx context.Context, t *delta.Table, opts Options) (*Result, error) {
	opts = opts.withDefaults()
	snap, err := opts.Snapshots(ctx, t, -1)
	if err != nil {
		return nil, fmt.Errorf("backfill stats of %s: load snapshot: %w", t.URL, err)
	}
	if err := delta.Writable(snap); err != nil {
		return nil, failure.With(failure.Halt, fmt.Errorf("backfill stats of %s version %d: %w", t.URL, snap.Version, err))
	}
	res := &Result{Table: t.URL, ReadVersion: snap.Version, CommittedVersion: -1}
	need, err := Expected(snap)
	if err != nil {
		return nil, failure.With(failure.Halt, fmt.Errorf("backfill stats of %s: %w", t.URL, err))
	}
	var todo []*deltaactions.Add
	for _, a := range snap.Files {
		if opts.Exclude[a.Path] {
			continue
		}
		switch Missing(a, need) {
		case MissingAll:
			res.NoStats++
		case MissingSome:
			res.Partial++
		default:
			continue
		}
		todo = append(todo, a)
	}
	res.Candidates = len(todo)
	if opts.MaxFiles > 0 && len(todo) > opts.MaxFiles {
		todo = todo[:opts.MaxFiles]
	}
	if opts.DryRun || len(todo) == 0 {
		return res, nil
	}
	stats := make([]string, len(todo))
	rows := make([]int64, len(todo))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Concurrency)
	for i, a := range todo {
		g.Go(func() error {
			s, n, err := Compute(gctx, t, snap, a)
			if err != nil {
				return err
			}
			stats[i], rows[i] = s, n
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return res, err
	}
	computed := map[string]*deltaactions.Add{}
	for i, a := range todo {
		na := *a
		na.Stats, na.ParsedStats, na.DataChange = stats[i], nil, false
		computed[a.FileKey()] = &na
		res.Rows += rows[i]
	}
	for attempt := 1; ; attempt++ {
		adds, read := stillLive(snap, computed)
		res.Dropped = len(computed) - len(adds)
		if len(adds) == 0 {
			return res, nil
		}
		actions := make([]deltaactions.Action, len(adds))
		for i, a := range adds {
			actions[i] = deltaactions.Action{Add: a}
		}
		tx := &commit.Txn{Table: t, Snapshot: snap, Operation: "COMPUTE STATS",
			OperationParameters: map[string]any{"predicate": `["true"]`},
			OperationMetrics:    map[string]string{"numFiles": fmt.Sprint(len(adds))},
			IsolationLevel:      "SnapshotIsolation", ReadFiles: read, Actions: actions, Options: opts.Commit}
		v, err := tx.Commit(ctx)
		if err == nil {
			res.CommittedVersion, res.Backfilled = v, len(adds)
			opts.Logger.Info("backfilled statistics", "table", t.URL, "files", len(adds), "version", v)
			return res, nil
		}
		if attempt >= maxAttempts || !(errors.Is(err, commit.ErrConflict) || errors.Is(err, commit.ErrMetadataChanged)) {
			return res, fmt.Errorf("backfill stats of %s: commit: %w", t.URL, err)
		}
		// A concurrent commit removed (or re-added with a new DV) some of
		// the files, or changed the metadata: keep what is unchanged.
		if snap, err = opts.Snapshots(ctx, t, -1); err != nil {
			return res, fmt.Errorf("backfill stats of %s: reload snapshot: %w", t.URL, err)
		}
		if nn, err := Expected(snap); err != nil || !sameSet(nn, need) {
			return res, fmt.Errorf("backfill stats of %s: the statistics settings changed concurrently: %w", t.URL, commit.ErrMetadataChanged)
		}
	}
}

// stillLive returns the computed adds whose file (path and DV) is live in
// snap, sorted by path, and their paths as the transaction's read set.
func stillLive(snap *delta.Snapshot, computed map[string]*deltaactions.Add) ([]*deltaactions.Add, map[string]bool) {
	var out []*deltaactions.Add
	read := map[string]bool{}
	for _, f := range snap.Files {
		if a, ok := computed[f.FileKey()]; ok {
			out = append(out, a)
			read[a.Path] = true
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, read
}

// Compute returns the statistics of a's data file as the writer computes
// them for the same rows: every physical row is observed (a deletion vector
// is not applied), and a file with a DV gets tightBounds=false. n is the
// number of rows, checked against the parquet footer.
func Compute(ctx context.Context, t *delta.Table, snap *delta.Snapshot, a *deltaactions.Add) (stats string, n int64, err error) {
	schema, err := scan.DataSchema(snap)
	if err != nil {
		return "", 0, err
	}
	c, err := statscollect.NewStatsCollector(&snap.Metadata, snap.Schema, schema)
	if err != nil {
		return "", 0, err
	}
	c.SetProtocol(snap.Protocol)
	s, err := scan.OpenFileScan(ctx, t, snap, a, scan.ScanOptions{DV: roaring64.New(), ReuseRows: true})
	if err != nil {
		return "", 0, fmt.Errorf("backfill stats of %s: %w", a.Path, err)
	}
	defer s.Close()
	buf := make([]parquet.Row, 256)
	for {
		m, rerr := s.ReadRows(buf, nil)
		c.ObserveRows(buf[:m])
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return "", 0, fmt.Errorf("backfill stats of %s: %w", a.Path, rerr)
		}
	}
	if phys := s.NumPhysicalRows(); c.NumRecords() != phys {
		return "", 0, fmt.Errorf("backfill stats of %s: read %d rows, the footer says %d", a.Path, c.NumRecords(), phys)
	}
	if stats, err = c.Finish(); err != nil {
		return "", 0, err
	}
	if a.DeletionVector != nil {
		stats = statscollect.MarkStatsWide(stats)
	}
	return stats, c.NumRecords(), nil
}
