package retention

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	deltascan "github.com/compactord/compactord/delta/scan"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/hashicorp/go-hclog"
	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/predicate"
	"github.com/compactord/compactord/delta/schema"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/attemptsweep"
	"github.com/compactord/compactord/internal/deletegate"
	"github.com/compactord/compactord/internal/progress"
	"github.com/compactord/compactord/internal/units"
	"github.com/compactord/compactord/writer"
)

// Options describe one retention delete: rows whose Column is older
// than a cutoff are deleted.
type Options struct {
	// Column is the logical column (dotted path for nested fields): a date,
	// timestamp or timestamp_ntz column, or an integer column holding time
	// since the Unix epoch in EpochUnit. Other types are refused. On a
	// partition column the delete is a pure partition predicate (whole
	// files, metadata only).
	Column string
	// EpochUnit is the unit of an integer Column: days, seconds,
	// milliseconds or microseconds since 1970-01-01 UTC. It is required for
	// an integer column (so that a row id is never taken for a time by
	// accident) and refused for the others.
	EpochUnit string
	// Before is the cutoff: rows with Column < Before expire. A date
	// (2021-03-01) or timestamp (2021-03-01 12:00:00, RFC 3339); for an
	// integer column also a count of EpochUnit. When empty, the cutoff is
	// Now - OlderThan.
	Before string
	// OlderThan and Now give the cutoff when Before is empty.
	OlderThan time.Duration
	Now       time.Time
	// TimeZone is the zone zone-less timestamp partition values were written
	// in (Spark writes them in its session time zone); nil: UTC. It matters
	// when the retention column, or a partition column a concurrent
	// writer's files are matched on, is a timestamp partition column.
	TimeZone *time.Location
	// DisableDataSkipping turns conflict-time data skipping off (the policy
	// switch): concurrent added files are then matched on partitions only.
	DisableDataSkipping bool
	// DryRun finds what would be deleted (Result.Partitions) without
	// writing or committing anything.
	DryRun bool
	// MaxAttempts bounds the runs from a fresh snapshot after an
	// unresolvable conflict (default 5).
	MaxAttempts int
	// AttemptStaleAfter is how long an intent record of a local attempt
	// may go unmodified before the delete's start counts that attempt as
	// dead and deletes what it wrote and did not commit (default
	// attempt.DefaultStaleAfter, 1h; live runs rewrite theirs every
	// minute), as compaction.RunOptions.AttemptStaleAfter. Tests shorten
	// it.
	AttemptStaleAfter time.Duration
	// Commit tunes each commit's put-if-absent loop.
	Commit commit.Options
	// Writer tunes copy-on-write rewrites (tables without deletion vectors).
	Writer writer.Options
	// Logger receives progress (default: null logger).
	Logger hclog.Logger
	// Progress, when set, receives the scan's progress: the snapshot's
	// files and bytes examined (phase "scan"; rewrites and DV writes
	// happen within it).
	Progress progress.Func
}

// Result is what a retention delete did (the JSON of `compactord
// expire`). CommittedVersion is -1 when nothing matched.
type Result struct {
	CommittedVersion int64          `json:"committedVersion"`
	Predicate        string         `json:"predicate"`
	FilesRemoved     int            `json:"filesRemoved"`
	FilesWithNewDV   int            `json:"filesWithNewDV"`
	FilesAdded       int            `json:"filesAdded"`
	RowsDeleted      int64          `json:"rowsDeleted"`
	FilesScanned     int            `json:"filesScanned"`
	Attempts         int            `json:"attempts"`
	Conflicts        map[string]int `json:"conflicts"`
	// DryRun is set when nothing was committed on purpose; the counts
	// above and Partitions are then what the delete would do at
	// ReadVersion.
	DryRun      bool  `json:"dryRun,omitempty"`
	ReadVersion int64 `json:"readVersion"`
	// Partitions breaks the delete down by partition (one entry with an
	// empty Partition on an unpartitioned table), sorted by partition.
	Partitions []PartitionDeletes `json:"partitions,omitempty"`
	// SweptAttempts counts the dead attempts (killed runs) whose intent
	// records the delete's start swept; SweptObjects the uncommitted
	// objects of theirs (and upload temp files) it deleted. A dry run
	// sweeps nothing.
	SweptAttempts int64 `json:"sweptAttempts"`
	SweptObjects  int64 `json:"sweptObjects"`
}

// PartitionDeletes is what a retention delete does in one partition.
type PartitionDeletes struct {
	// Partition is "col=value/col2=value2" in the table's partition order;
	// a null value is written __HIVE_DEFAULT_PARTITION__ as Spark does.
	Partition string `json:"partition"`
	// Rows is how many live rows are deleted.
	Rows int64 `json:"rows"`
	// FilesRemoved are files every live row of which expires;
	// FilesWithNewDV get a deletion vector; FilesRewritten are rewritten
	// without the expired rows (tables without deletion vectors).
	FilesRemoved   int `json:"filesRemoved"`
	FilesWithNewDV int `json:"filesWithNewDV"`
	FilesRewritten int `json:"filesRewritten"`
}

// Expire runs one retention delete on t. Files whose statistics prove that
// every live row expires are removed whole; files that partly match get a
// deletion vector (when the table enables them) or are rewritten
// copy-on-write. The commit is a DELETE at the table's isolation level; an
// unresolvable conflict is retried from a fresh snapshot. Unless it is a
// dry run, it first sweeps the dead attempts of killed runs
// (attemptsweep.AtStart, Options.AttemptStaleAfter): a table whose
// policy only expires gets the cleanup compaction runs do.
func Expire(ctx context.Context, t *delta.Table, opts Options) (*Result, error) {
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 5
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	res := &Result{CommittedVersion: -1, Conflicts: map[string]int{}}
	if !opts.DryRun {
		// The next run cleans up after a killed one (a failed sweep is
		// retried by the next run).
		swept := attemptsweep.AtStart(ctx, t, opts.AttemptStaleAfter, opts.Logger, delta.LoadSnapshot)
		res.SweptAttempts, res.SweptObjects = swept.Records, swept.Objects
	}
	var lastErr error
	for attempt := 1; attempt <= opts.MaxAttempts; attempt++ {
		res.Attempts = attempt
		err := expireOnce(ctx, t, opts, res)
		if err == nil {
			return res, nil
		}
		lastErr = err
		if !errors.Is(err, commit.ErrConflict) && !errors.Is(err, commit.ErrMetadataChanged) {
			return res, err
		}
		opts.Logger.Info("retention delete lost to a concurrent commit; retrying from a new snapshot",
			"table", t.URL, "attempt", attempt, "error", err)
	}
	return res, fmt.Errorf("retention delete on %s: gave up after %d attempts: %w", t.URL, opts.MaxAttempts, lastErr)
}

// expireTarget is the resolved retention column.
type expireTarget struct {
	logical   []string
	col       predicate.Column // physical path
	typ       *schema.DataType
	partition bool
	pred      predicate.Expr
}

func resolveExpire(snap *delta.Snapshot, opts Options) (*expireTarget, error) {
	if opts.Column == "" {
		return nil, errors.New("retention: no column given")
	}
	logical, err := schema.ParseColumnPath(opts.Column)
	if err != nil {
		return nil, fmt.Errorf("retention column: %w", err)
	}
	field, err := findField(snap.Schema, logical)
	if err != nil {
		return nil, err
	}
	kind := predicate.KindOf(field.Type.Name)
	switch {
	case kind == predicate.KindDate || kind == predicate.KindTimestamp:
		if opts.EpochUnit != "" {
			return nil, fmt.Errorf("retention column %s has type %s: an epoch unit (%s) applies only to integer columns", opts.Column, field.Type.Name, opts.EpochUnit)
		}
	case kind == predicate.KindInt:
		if opts.EpochUnit == "" {
			return nil, fmt.Errorf("retention column %s has type %s: expire by an integer column only with the unit of time it holds since 1970-01-01 (epoch unit %s)", opts.Column, field.Type.Name, strings.Join(EpochUnits, ", "))
		}
		if _, ok := units.EpochUnitMicros(opts.EpochUnit); !ok {
			return nil, fmt.Errorf("retention column %s: unknown epoch unit %q (want %s)", opts.Column, opts.EpochUnit, strings.Join(EpochUnits, ", "))
		}
	default:
		return nil, fmt.Errorf("retention column %s has type %s: expire takes a date, timestamp or timestamp_ntz column, or an integer column with its epoch unit", opts.Column, field.Type.Name)
	}
	phys, err := snap.Schema.PhysicalPath(logical)
	if err != nil {
		return nil, fmt.Errorf("retention column %s: %w", opts.Column, err)
	}
	cutoff, err := expireCutoff(opts, kind, field.Type.Name)
	if err != nil {
		return nil, err
	}
	col := predicate.Column{Path: phys, Kind: kind}
	pred, err := predicate.NewCmp(col, predicate.OpLt, cutoff)
	if err != nil {
		return nil, err
	}
	partition := false
	if len(logical) == 1 {
		for _, p := range snap.Metadata.PartitionColumns {
			if strings.EqualFold(p, logical[0]) { // column names are case-insensitive
				partition = true
			}
		}
	}
	return &expireTarget{logical: logical, col: col, typ: field.Type, partition: partition, pred: pred}, nil
}

// EpochUnits are the units an integer retention column may hold (the
// one list, units.EpochUnits, that policies validate against too).
var EpochUnits = units.EpochUnits

// cutoffFormats says which cutoffs a column of kind takes.
func cutoffFormats(kind predicate.Kind, unit string) string {
	const ts = "a date YYYY-MM-DD (2021-03-01), or a timestamp YYYY-MM-DD HH:MM:SS[.ffffff] (UTC) or RFC 3339 (2021-03-01T12:00:00Z, 2021-03-01T12:00:00+02:00)"
	switch kind {
	case predicate.KindDate:
		return "a date YYYY-MM-DD, e.g. 2021-03-01"
	case predicate.KindInt:
		return "a whole number of " + unit + " since 1970-01-01, " + ts
	}
	return ts
}

// expireCutoff is the value rows must be below to expire.
func expireCutoff(opts Options, kind predicate.Kind, typeName string) (predicate.Value, error) {
	var micros int64
	switch {
	case opts.Before != "":
		v, err := predicate.ParseLiteral(kind, opts.Before)
		if err == nil {
			return v, nil
		}
		if kind != predicate.KindInt {
			return predicate.Value{}, fmt.Errorf("retention cutoff %q for %s column %s: want %s", opts.Before, typeName, opts.Column, cutoffFormats(kind, opts.EpochUnit))
		}
		ts, err := predicate.ParseLiteral(predicate.KindTimestamp, opts.Before)
		if err != nil {
			return predicate.Value{}, fmt.Errorf("retention cutoff %q for %s column %s (%s since 1970-01-01): want %s", opts.Before, typeName, opts.Column, opts.EpochUnit, cutoffFormats(kind, opts.EpochUnit))
		}
		micros = ts.I
	case opts.OlderThan > 0:
		micros = opts.Now.Add(-opts.OlderThan).UnixMicro()
	default:
		return predicate.Value{}, errors.New("retention: neither a cutoff (before) nor older_than given")
	}
	switch kind {
	case predicate.KindDate:
		day, _ := units.EpochUnitMicros("days")
		return predicate.Date(floorDiv(micros, day)), nil
	case predicate.KindTimestamp:
		return predicate.Timestamp(micros), nil
	}
	// A cutoff inside a unit rounds down, as for dates: a value expires
	// only when all of its unit lies before the cutoff.
	per, _ := units.EpochUnitMicros(opts.EpochUnit)
	return predicate.Int(floorDiv(micros, per)), nil
}

// floorDiv is a / b rounded toward negative infinity (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func findField(s *schema.StructType, path []string) (*schema.StructField, error) {
	cur := s
	for i, name := range path {
		var found *schema.StructField
		for _, f := range cur.Fields {
			if strings.EqualFold(f.Name, name) {
				found = f
				break
			}
		}
		if found == nil {
			return nil, fmt.Errorf("retention column %s: no field %q in the table schema", strings.Join(path, "."), name)
		}
		if i == len(path)-1 {
			return found, nil
		}
		if found.Type.Struct == nil {
			return nil, fmt.Errorf("retention column %s: %s is not a struct", strings.Join(path, "."), name)
		}
		cur = found.Type.Struct
	}
	return nil, errors.New("retention: empty column path")
}

func expireOnce(ctx context.Context, t *delta.Table, opts Options, res *Result) error {
	snap, err := delta.LoadSnapshot(ctx, t, -1)
	if err != nil {
		return fmt.Errorf("load snapshot: %w", err) // delta's errors name the table
	}
	if err := delta.Writable(snap); err != nil {
		return failure.With(failure.Halt, fmt.Errorf("table %s version %d: %w", t.URL, snap.Version, err))
	}
	if snap.Properties().AppendOnly {
		return failure.With(failure.Halt, fmt.Errorf("table %s is append-only (delta.appendOnly=true): retention deletes are not allowed", t.URL))
	}
	res.ReadVersion = snap.Version
	res.DryRun = opts.DryRun
	tgt, err := resolveExpire(snap, opts)
	if err != nil {
		return failure.With(failure.Halt, err)
	}
	// Reported with logical names (the predicate itself uses physical ones).
	if shown, err := predicate.NewCmp(predicate.Column{Path: tgt.logical, Kind: tgt.col.Kind}, predicate.OpLt, tgt.pred.(predicate.Cmp).Value); err == nil {
		res.Predicate = shown.String()
	} else {
		res.Predicate = expirePredicateText(tgt, opts)
	}
	partKinds := map[string]predicate.Kind{}
	parts, err := actions.PartitionFields(&snap.Metadata, snap.Schema)
	if err != nil {
		return err
	}
	partZones := map[string]*time.Location{}
	for _, f := range parts {
		partKinds[schema.PhysicalName(f)] = predicate.KindOf(f.Type.Name)
		if f.Type.Name == "timestamp" && opts.TimeZone != nil { // timestamp_ntz values have no zone
			partZones[schema.PhysicalName(f)] = opts.TimeZone
		}
	}
	read := predicate.Read{Data: tgt.pred}
	if tgt.partition {
		read = predicate.Read{Partition: tgt.pred}
	}
	matcher := predicate.Matcher{PartitionKinds: partKinds, PartitionZones: partZones, SkipStats: opts.DisableDataSkipping}
	dvOK := commit.DVsAllowed(snap)

	var (
		changes     []*commit.FileChange
		readOnly    = map[string]bool{}
		dryRewrites = map[string]bool{} // files a dry run would rewrite
		// The delete owns its attempt: copy-on-write outputs and DV files
		// are tracked here, and what the commit did not publish is
		// deleted on every exit path.
		objs = &attempt.Objects{}
	)
	// Before each object is created its key is in the delete's intent
	// record too, so that the next run (compaction or retention) cleans up
	// after a kill (a dry run writes nothing).
	var journal *attempt.Journal
	if !opts.DryRun {
		if journal, err = attempt.StartJournal(ctx, t.Bucket, "retention", attempt.JournalOptions{}); err != nil {
			return fmt.Errorf("table %s: %w", t.URL, err)
		}
		objs.OnTrack(journal.Track)
	}
	defer func() {
		if _, err := deletegate.EndAttempt(ctx, t.Bucket, t.URL, objs, journal, opts.Logger); err != nil {
			opts.Logger.Warn("delete uncommitted retention outputs", "table", t.URL, "error", err)
		}
	}()
	var total, done int64
	for _, f := range snap.Files {
		total += f.Size
	}
	tr := progress.Start(opts.Progress, "retention", "scan", int64(len(snap.Files)), total, opts.Now)
	for i, f := range snap.Files {
		tr.Set(int64(i), done)
		done += f.Size
		if tgt.partition {
			match, err := matcher.MayMatchReads([]predicate.Read{read}, false, f)
			if err != nil {
				return failure.With(failure.Quarantine, fmt.Errorf("table %s: %w", t.URL, err))
			}
			if match {
				c := &commit.FileChange{Read: f, Whole: true}
				if _, known, _ := f.NumRecords(); !known && f.DeletionVector == nil {
					// Count the rows from the footer, for the report
					// and the expired-rows metric.
					// A count is not worth failing a metadata-only delete over.
					if n, err := footerRows(ctx, t, snap, f); err != nil {
						opts.Logger.Warn("cannot count the rows of a removed file", "table", t.URL, "file", f.Path, "error", err)
					} else {
						c.Deleted = roaring64.New()
						c.Deleted.AddRange(0, uint64(n))
					}
				}
				changes = append(changes, c)
			}
			continue
		}
		st, err := f.FullStats()
		stats := predicate.DeltaStats{Stats: st}
		may := true
		if err == nil {
			may, err = predicate.MayMatch(tgt.pred, stats)
		}
		if err != nil {
			opts.Logger.Warn("cannot evaluate stats; scanning the file", "table", t.URL, "file", f.Path, "error", err)
			may = true
		}
		if !may {
			continue
		}
		// Every live row expires when no row can be >= cutoff or NULL.
		survivors := predicate.Or{predicate.Not(tgt.pred), predicate.IsNull{Col: tgt.col}}
		if some, err := predicate.MayMatch(survivors, stats); err == nil && !some {
			changes = append(changes, &commit.FileChange{Read: f, Whole: true})
			continue
		}
		res.FilesScanned++
		deleted, live, err := expiredRows(ctx, t, snap, f, tgt)
		if err != nil {
			return failure.With(failure.Quarantine, err)
		}
		switch {
		case deleted.IsEmpty():
			readOnly[f.Path] = true
		case int64(deleted.GetCardinality()) == live:
			// The rows are known: the commit counts them even when the
			// file has no numRecords statistic.
			changes = append(changes, &commit.FileChange{Read: f, Whole: true, Deleted: deleted})
		case dvOK:
			changes = append(changes, &commit.FileChange{Read: f, Deleted: deleted})
		case opts.DryRun:
			changes = append(changes, &commit.FileChange{Read: f, Deleted: deleted})
			dryRewrites[f.Path] = true
		default:
			out, err := rewriteWithout(ctx, t, snap, f, deleted, objs, opts.Writer)
			if err != nil {
				return err
			}
			var adds []*actions.Add
			for _, o := range out.Outputs {
				a := *o.Add
				a.DataChange = true
				adds = append(adds, &a)
			}
			changes = append(changes, &commit.FileChange{Read: f, Deleted: deleted, Rewritten: adds})
		}
	}
	tr.Set(int64(len(snap.Files)), done)
	if opts.DryRun {
		dryRunReport(res, snap, parts, changes, dryRewrites)
		opts.Logger.Info("retention dry run: nothing committed", "table", t.URL, "predicate", res.Predicate, "version", snap.Version,
			"rows", res.RowsDeleted, "filesRemoved", res.FilesRemoved, "filesWithNewDV", res.FilesWithNewDV)
		return nil
	}
	if len(changes) == 0 {
		opts.Logger.Info("retention delete: no rows expired", "table", t.URL, "predicate", res.Predicate, "version", snap.Version)
		return nil
	}
	dml := &commit.DML{
		Txn: &commit.Txn{
			Table:               t,
			Snapshot:            snap,
			Operation:           "DELETE",
			OperationParameters: map[string]any{"predicate": fmt.Sprintf("[%q]", expirePredicateText(tgt, opts))},
			Objects:             objs,
			Options:             opts.Commit,
		},
		Reads:    []predicate.Read{read},
		Matcher:  matcher,
		ReadOnly: readOnly,
		Changes:  changes,
	}
	out, err := dml.Commit(ctx)
	for k, n := range dml.Conflicts() {
		res.Conflicts[k] += n
	}
	if err != nil {
		return err
	}
	res.CommittedVersion = out.Version
	res.FilesRemoved = out.FilesRemoved
	res.FilesWithNewDV = out.FilesWithNewDV
	res.FilesAdded = out.FilesAdded
	res.RowsDeleted = out.RowsDeleted
	opts.Logger.Info("retention delete committed", "table", t.URL, "version", out.Version, "rows", out.RowsDeleted,
		"filesRemoved", out.FilesRemoved, "filesWithNewDV", out.FilesWithNewDV)
	return nil
}

// dryRunReport fills res with what changes would do, per partition.
func dryRunReport(res *Result, snap *delta.Snapshot, parts []*schema.StructField, changes []*commit.FileChange, rewrites map[string]bool) {
	byPart := map[string]*PartitionDeletes{}
	res.RowsDeleted, res.FilesRemoved, res.FilesWithNewDV, res.FilesAdded = 0, 0, 0, 0
	for _, c := range changes {
		key := partitionKey(parts, c.Read)
		pd := byPart[key]
		if pd == nil {
			pd = &PartitionDeletes{Partition: key}
			byPart[key] = pd
		}
		var rows int64
		if c.Deleted != nil {
			rows = int64(c.Deleted.GetCardinality())
		} else if n, known, _ := c.Read.NumRecords(); known {
			rows = n
			if c.Read.DeletionVector != nil {
				rows -= c.Read.DeletionVector.Cardinality
			}
		}
		pd.Rows += rows
		res.RowsDeleted += rows
		switch {
		case c.Whole:
			pd.FilesRemoved++
			res.FilesRemoved++
		case rewrites[c.Read.Path]:
			pd.FilesRewritten++
			res.FilesRemoved++
			res.FilesAdded++ // at most one output per rewritten file
		default:
			pd.FilesWithNewDV++
			res.FilesWithNewDV++
		}
	}
	res.Partitions = make([]PartitionDeletes, 0, len(byPart))
	for _, pd := range byPart {
		res.Partitions = append(res.Partitions, *pd)
	}
	sort.Slice(res.Partitions, func(i, j int) bool { return res.Partitions[i].Partition < res.Partitions[j].Partition })
}

// partitionKey renders f's partition values as col=value/... in the
// table's partition order, with logical column names.
func partitionKey(parts []*schema.StructField, f *actions.Add) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(p.Name)
		b.WriteByte('=')
		if v := f.PartitionValues[schema.PhysicalName(p)]; v != nil {
			b.WriteString(*v)
		} else {
			b.WriteString("__HIVE_DEFAULT_PARTITION__")
		}
	}
	return b.String()
}

// expirePredicateText renders the predicate with logical names, as Spark
// records it in commitInfo.operationParameters.predicate.
func expirePredicateText(tgt *expireTarget, opts Options) string {
	c := tgt.pred.(predicate.Cmp)
	return fmt.Sprintf("(%s < %s)", schema.FormatColumnPath(tgt.logical), c.Value)
}

// footerRows is the row count in f's parquet footer.
func footerRows(ctx context.Context, t *delta.Table, snap *delta.Snapshot, f *actions.Add) (int64, error) {
	scan, err := deltascan.OpenFileScan(ctx, t, snap, f, deltascan.ScanOptions{})
	if err != nil {
		return 0, err
	}
	defer scan.Close()
	return scan.NumPhysicalRows(), nil
}

// expiredRows scans f's live rows and returns the physical indexes of those
// matching the retention predicate, and the live row count. Only the
// retention column's leaf is converted, not whole rows.
func expiredRows(ctx context.Context, t *delta.Table, snap *delta.Snapshot, f *actions.Add, tgt *expireTarget) (*roaring64.Bitmap, int64, error) {
	scan, err := deltascan.OpenFileScan(ctx, t, snap, f, deltascan.ScanOptions{ReuseRows: true})
	if err != nil {
		return nil, 0, err
	}
	defer scan.Close()
	leaf, ok := scan.Schema().Lookup(tgt.col.Path...)
	if !ok {
		return nil, 0, fmt.Errorf("file %s: retention column %s (physical %s) is not in the data schema", f.Path, schema.FormatColumnPath(tgt.logical), schema.FormatColumnPath(tgt.col.Path))
	}
	out := roaring64.New()
	rows := make([]parquet.Row, 256)
	idx := make([]int64, 256)
	var live int64
	for {
		n, err := scan.ReadRows(rows, idx)
		for i := 0; i < n; i++ {
			live++
			v, ok, verr := leafPredicateValue(rows[i], leaf.ColumnIndex, tgt)
			if verr != nil {
				return nil, 0, fmt.Errorf("file %s row %d: %w", f.Path, idx[i], verr)
			}
			if !ok {
				continue
			}
			truth, eerr := predicate.EvalRow(tgt.pred, singleRow{v: v})
			if eerr != nil {
				return nil, 0, fmt.Errorf("file %s row %d: %w", f.Path, idx[i], eerr)
			}
			if truth == predicate.True {
				out.Add(uint64(idx[i]))
			}
		}
		if errors.Is(err, io.EOF) {
			return out, live, nil
		}
		if err != nil {
			return nil, 0, fmt.Errorf("scan %s: %w", f.Path, err)
		}
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
	}
}

// singleRow is a Row holding only the retention column's value.
type singleRow struct{ v predicate.Value }

func (r singleRow) Lookup(predicate.Column) (predicate.Value, bool, error) { return r.v, true, nil }

// leafPredicateValue reads the retention column (leaf column index col) of
// one data-schema row as a predicate value; ok is false for NULL.
func leafPredicateValue(row parquet.Row, col int, tgt *expireTarget) (predicate.Value, bool, error) {
	for _, pv := range row {
		if pv.Column() != col {
			continue
		}
		if pv.IsNull() {
			return predicate.Value{}, false, nil
		}
		lv, err := deltascan.LeafValue(pv, tgt.typ)
		if err != nil {
			return predicate.Value{}, false, err
		}
		return predicateValue(lv, tgt)
	}
	return predicate.Value{}, false, nil
}

// predicateValue converts a logical Go value (delta.LeafValue) into a
// predicate value of the column's kind.
func predicateValue(x any, tgt *expireTarget) (predicate.Value, bool, error) {
	switch x := x.(type) {
	case int64:
		return predicate.Int(x), true, nil
	case float32:
		return predicate.Float(float64(x)), true, nil
	case float64:
		return predicate.Float(x), true, nil
	case string:
		return predicate.String(x), true, nil
	case schema.Date:
		return predicate.Date(int64(x)), true, nil
	case schema.Timestamp:
		return predicate.Timestamp(int64(x)), true, nil
	case schema.TimestampNTZ:
		return predicate.Timestamp(int64(x)), true, nil
	case schema.Decimal:
		v, err := predicate.Decimal(x.String())
		return v, err == nil, err
	}
	return predicate.Value{}, false, fmt.Errorf("column %s: unsupported value %T for kind %v", tgt.col, x, tgt.col.Kind)
}

// rewriteWithout rewrites f without the deleted rows (copy-on-write): the
// writer reads a copy of f's add whose inline DV also covers the deleted
// rows, so the shared streaming path writes only the survivors.
func rewriteWithout(ctx context.Context, t *delta.Table, snap *delta.Snapshot, f *actions.Add, deleted *roaring64.Bitmap, objs *attempt.Objects, wo writer.Options) (*writer.Result, error) {
	all := deleted.Clone()
	if f.DeletionVector != nil {
		old, err := delta.ReadDV(ctx, t, f.DeletionVector)
		if err != nil {
			return nil, failure.With(failure.Quarantine, fmt.Errorf("read DV of %s: %w", f.Path, err))
		}
		all.Or(old)
	}
	dv, err := delta.InlineDV(all)
	if err != nil {
		return nil, err
	}
	src := *f
	src.DeletionVector = dv
	job := &writer.Job{ID: "expire-" + f.Path, Sources: []*actions.Add{&src}, PartitionValues: f.PartitionValues}
	out, err := writer.Rewrite(ctx, t, snap, job, objs, wo)
	if err != nil {
		return nil, fmt.Errorf("copy-on-write rewrite of %s: %w", f.Path, err)
	}
	return out, nil
}
