package policies

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/compactord/compactord/events"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/redact"
	"github.com/compactord/compactord/internal/units"
	"github.com/compactord/compactord/planner"
	"github.com/compactord/compactord/writer"
)

// Strategy names how a table's files are rewritten.
type Strategy string

// Strategies a policy may name.
const (
	// StrategyAuto lets the planner choose per run (binpack unless the
	// clustering thresholds call for lightweight or zcube).
	StrategyAuto Strategy = "auto"
	// StrategyBinpack concatenates small files up to the target size.
	StrategyBinpack Strategy = "binpack"
	// StrategyLightweight groups files by overlap on one column.
	StrategyLightweight Strategy = "lightweight"
	// StrategyZcube clusters rows on several columns (Hilbert order).
	StrategyZcube Strategy = "zcube"
)

// Job orders a policy may name for the jobs of one run.
var jobOrders = []string{"files-desc", "files-asc", "bytes-desc", "bytes-asc", "oldest-first"}

// Compression codecs a policy may name for rewritten files.
var compressions = []string{"zstd", "snappy", "gzip", "none"}

// Policy is the effective policy of one table: the daemon defaults with the
// table's own attributes layered over them. The zero value is not valid;
// start from DefaultPolicy.
type Policy struct {
	// Name is the table block's label; unique in a directory.
	Name string `json:"name"`
	// URL locates the table (file:///abs, an absolute path,
	// s3://bucket/prefix, mem://...), as the command line takes it.
	URL string `json:"url"`
	// Schedule is a cron expression (5 fields, or @every/@hourly forms);
	// empty means the table runs only on triggers, signals and the API.
	Schedule string `json:"schedule,omitempty"`
	// Strategy is auto, binpack, lightweight or zcube.
	Strategy Strategy `json:"strategy"`
	// Enabled false keeps the table loaded (visible in /status) but never run.
	Enabled bool `json:"enabled"`
	// Concurrency bounds the rewrite jobs of one run executed at once.
	Concurrency int `json:"concurrency"`
	// Compression is the parquet codec of rewritten files.
	Compression string `json:"compression"`

	// TargetFileSize is the size rewritten files aim for, in bytes; 0 means
	// the table property delta.targetFileSize, else 128MiB.
	TargetFileSize int64 `json:"target_file_size"`
	// MinFileSize: files at least this big are not rewritten by binpack
	// (unless deletion vectors or clustering call for it).
	MinFileSize int64 `json:"min_file_size"`
	// MaxDeletedRowsRatio: a file whose deletion vector covers more than
	// this share of its rows is rewritten (purged) regardless of size.
	MaxDeletedRowsRatio float64 `json:"max_deleted_rows_ratio"`
	// SettleWindow: files younger than this are not compacted; the writer
	// beside us may still be writing their neighbours.
	SettleWindow time.Duration `json:"settle_window"`
	// MaxBytesPerRun caps the input bytes of one run (0 = unlimited).
	MaxBytesPerRun int64 `json:"max_bytes_per_run"`
	// MaxJobsPerRun caps the jobs of one run (0 = unlimited).
	MaxJobsPerRun int `json:"max_jobs_per_run"`
	// JobOrder picks which jobs go first when a cap cuts the plan.
	JobOrder string `json:"job_order"`
	// CommitEveryJobs commits a run's finished jobs in batches of this many
	// as they finish (partial progress); 0 = no count trigger.
	CommitEveryJobs int `json:"commit_every_jobs"`
	// CommitInterval commits the finished jobs waiting once this long has
	// passed since the run's start or last commit; 0 = no time trigger.
	// With neither, a run commits once, at the end.
	CommitInterval time.Duration `json:"commit_interval"`

	// Clustering configures lightweight and zcube.
	Clustering Clustering `json:"clustering"`
	// Triggers fire a run from the poll when a threshold is crossed.
	Triggers Triggers `json:"triggers"`
	// Retention is parsed and validated; nil when the table has none.
	Retention *Retention `json:"retention,omitempty"`
	// Vacuum is parsed and validated; nil when the table has none (the
	// daemon then only sweeps temp leftovers of killed writes).
	Vacuum *Vacuum `json:"vacuum,omitempty"`
	// StatsBackfill is parsed and validated; nil when the table has none.
	StatsBackfill *StatsBackfill `json:"stats_backfill,omitempty"`
	// Executor chooses where a compaction run's rewrite jobs run; nil when
	// the table has no executor block (in the daemon's own process).
	Executor *Executor `json:"executor,omitempty"`
	// Checkpoint configures the checkpoints the daemon writes (on by
	// default).
	Checkpoint Checkpoint `json:"checkpoint"`
	// LogCleanup configures the expired-log cleanup (on by default).
	LogCleanup LogCleanup `json:"log_cleanup"`
	// Fleet is the table's share of the daemon's workers (the fleet block).
	Fleet Fleet `json:"fleet"`

	// Source is where the table block was declared (file:line:col).
	Source string `json:"source,omitempty"`
}

// Clustering configures the clustering strategies.
type Clustering struct {
	// Columns are the clustering columns (zcube uses all, in order).
	Columns []string `json:"columns,omitempty"`
	// Auto is `columns = "auto"`: the daemon chooses the table's keys from
	// its workload (package clusteradvise) and writes them to the table's
	// delta.clustering domain, which the planner then clusters on; Columns
	// is empty.
	Auto bool `json:"auto,omitempty"`
	// LightweightColumn is the column lightweight groups on; empty means
	// the first of Columns.
	LightweightColumn string `json:"lightweight_column,omitempty"`
	// MaxUnclusteredBytes: auto switches to a clustering rewrite when more
	// bytes than this were written since the last clustering.
	MaxUnclusteredBytes int64 `json:"max_unclustered_bytes"`
	// MaxRelativeFileRange: lightweight regroups files whose value range on
	// the column spans more than this share of the table's range.
	MaxRelativeFileRange float64 `json:"max_relative_file_range"`
	// MinCubeSize: a zcube smaller than this stays open for more data.
	MinCubeSize int64 `json:"min_cube_size"`
	// CubeMergeMinCubes: how many adjacent partial zcubes one merge takes,
	// merges happening only while a partition holds more partial cubes than
	// 2 x sqrt(its files); 0 means the planner's default (4), -1 Delta's
	// merge of every partial cube on every clustering run.
	CubeMergeMinCubes int `json:"cube_merge_min_cubes"`
}

// Triggers are the thresholds the poll checks after reading new log entries.
// A zero threshold is off.
type Triggers struct {
	// SmallFiles fires when at least this many files are below MinFileSize.
	SmallFiles int `json:"small_files"`
	// DeletedRowsRatio fires when the table's deleted rows exceed this share.
	DeletedRowsRatio float64 `json:"deleted_rows_ratio"`
	// UnclusteredBytes fires when this many bytes are not yet clustered.
	UnclusteredBytes int64 `json:"unclustered_bytes"`
	// MaxTimeSinceLastRun fires when the last run is older than this.
	MaxTimeSinceLastRun time.Duration `json:"max_time_since_last_run"`
}

// Retention is a time-based row retention rule, run after each compaction
// of the table (retention.Expire).
type Retention struct {
	// Column is a date, timestamp or timestamp_ntz column, or an integer
	// column counting EpochUnit since 1970-01-01 UTC.
	Column string `json:"column"`
	// EpochUnit is the unit of an integer Column (days, seconds,
	// milliseconds or microseconds: units.EpochUnits), as `expire
	// --epoch-unit` takes it; the run refuses an integer column without
	// one and a date or timestamp column with one.
	EpochUnit string `json:"epoch_unit,omitempty"`
	// OlderThan deletes rows whose Column is older than now minus this.
	OlderThan time.Duration `json:"older_than"`
	// NoDataSkipping turns conflict-time data skipping off for the
	// retention delete (attribute data_skipping = false): concurrent added
	// files are then matched on partitions only.
	NoDataSkipping bool `json:"no_data_skipping,omitempty"`
	// TimeZone is the IANA zone zone-less timestamp partition values were
	// written in (the writer's session time zone); "" means UTC.
	TimeZone string `json:"time_zone,omitempty"`
}

// Checkpoint is the checkpoint block: after its other operations, the
// daemon checkpoints each of its own commits whose version is a multiple
// of the table's delta.checkpointInterval, and catches up on tables whose
// other writers never checkpoint (checkpoint.Maintain).
type Checkpoint struct {
	// Enabled turns the daemon's checkpoints on (default true).
	Enabled bool `json:"enabled"`
	// CatchUp also checkpoints other writers' commits when the newest
	// checkpoint is more than MaxBehind commits behind (default true).
	CatchUp bool `json:"catch_up"`
	// MaxBehind is the catch-up threshold in commits; 0 means the table's
	// delta.checkpointInterval.
	MaxBehind int `json:"max_behind"`
}

// Fleet is the fleet block: the table's share of the daemon's workers when
// more runs are due than workers are free.
type Fleet struct {
	// Quota is the worker time the table may use over a sliding hour, in
	// workers (0.5: half a worker-hour per hour), while other tables wait;
	// with none waiting it may use more.
	Quota float64 `json:"quota"`
	// Group names the table's quota group (Daemon.GroupQuotas); "" is none.
	Group string `json:"group,omitempty"`
}

// DefaultFleetQuota is a table's default quota: half a worker.
const DefaultFleetQuota = 0.5

// LogCleanup is the log_cleanup block: after the checkpoint pass the
// daemon deletes the log files older than delta.logRetentionDuration that
// a checkpoint covers (logcleanup.Cleanup). The table's
// delta.enableExpiredLogCleanup=false always wins.
type LogCleanup struct {
	// Enabled turns the daemon's log cleanup on (default true).
	Enabled bool `json:"enabled"`
	// Concurrency bounds the deletes in flight (0: 16).
	Concurrency int `json:"concurrency,omitempty"`
}

// Vacuum modes of a vacuum block.
const (
	VacuumAuto = "auto" // lite, and full every FullInterval
	VacuumLite = "lite"
	VacuumFull = "full"
)

// Default vacuum timings.
const (
	DefaultVacuumInterval     = 24 * time.Hour
	DefaultVacuumFullInterval = 7 * 24 * time.Hour
)

// Vacuum makes the daemon VACUUM the table after its other operations
// (vacuum.Run), at most once per Interval.
type Vacuum struct {
	// Mode is auto (default: lite, and full when the last full vacuum is
	// older than FullInterval), lite or full.
	Mode string `json:"mode"`
	// Interval is the least time between two vacuums of the table
	// (default 24h).
	Interval time.Duration `json:"interval"`
	// FullInterval is how often auto runs a full vacuum (default 7d).
	FullInterval time.Duration `json:"full_interval"`
	// Retention overrides delta.deletedFileRetentionDuration when > 0; a
	// shorter one needs ForceRetention.
	Retention time.Duration `json:"retention,omitempty"`
	// ForceRetention allows a Retention shorter than the table's.
	ForceRetention bool `json:"force_retention,omitempty"`
	// Concurrency bounds the deletes in flight (0: 16).
	Concurrency int `json:"concurrency,omitempty"`
}

// DefaultStatsBackfillMaxFiles bounds the files one backfill run reads.
const DefaultStatsBackfillMaxFiles = 100

// StatsBackfill makes the daemon compute the statistics of files written
// without them (statsbackfill.Run) on every run of the table.
type StatsBackfill struct {
	// MaxFiles bounds the files one run backfills (default 100).
	MaxFiles int `json:"max_files"`
}

// Executor kinds an executor block may name.
const (
	// ExecutorLocal runs the jobs in the daemon's process (the default).
	ExecutorLocal = "local"
	// ExecutorProcess runs each unit as a `compactord run-unit` child
	// process of the daemon's binary.
	ExecutorProcess = "process"
	// ExecutorKubernetes runs the units as a Kubernetes Indexed Job.
	ExecutorKubernetes = "kubernetes"
)

// Default executor settings.
const (
	DefaultExecutorParallelism          = 4
	DefaultExecutorBackoffLimitPerIndex = 2
)

// Executor fans a table's big compaction runs out to workers (package
// fanout): a run whose plan reads at least MinBacklogBytes runs its units
// on Kind's workers, a smaller one in the daemon's process.
type Executor struct {
	// Kind is local, process or kubernetes.
	Kind string `json:"kind"`
	// MinBacklogBytes is the least a plan must read (its jobs' source
	// bytes) to be fanned out; 0: every plan.
	MinBacklogBytes int64 `json:"min_backlog_bytes"`
	// Parallelism is how many units run at once (default 4).
	Parallelism int `json:"parallelism"`
	// BackoffLimitPerIndex is how many times a unit whose worker failed
	// with a retryable error (or was killed) is started again (default 2).
	BackoffLimitPerIndex int `json:"backoff_limit_per_index"`
	// MaxUnits caps the units of one run, grouping jobs by bytes (0: one
	// job per unit).
	MaxUnits int `json:"max_units"`
}

// Daemon holds process settings from an optional `daemon {}` block.
type Daemon struct {
	// Poll is how often each table's log is checked for new entries.
	Poll time.Duration `json:"poll"`
	// Workers is the global limit of runs executing at once.
	Workers int `json:"workers"`
	// HTTP is the listen address of the metrics/status server.
	HTTP string `json:"http"`
	// ShutdownTimeout bounds how long SIGTERM waits for in-flight runs.
	ShutdownTimeout time.Duration `json:"shutdown_timeout"`
	// BackoffBase and BackoffMax bound the exponential backoff after failures.
	BackoffBase time.Duration `json:"backoff_base"`
	BackoffMax  time.Duration `json:"backoff_max"`
	// Replica names this process for per-table leases between replicas;
	// empty (the default) means a single replica and no leases.
	Replica string `json:"replica,omitempty"`
	// LeaseTTL is how long a table lease holds without renewal.
	LeaseTTL time.Duration `json:"lease_ttl"`
	// AttemptStaleAfter is how long a run's intent record may go
	// unmodified before the start of a later compaction or retention run
	// counts its attempt dead (killed) and deletes what it wrote and did
	// not commit. Live runs rewrite theirs every minute
	// (attempt.DefaultHeartbeat).
	AttemptStaleAfter time.Duration `json:"attempt_stale_after"`
	// GroupQuotas bound the worker time of each quota group (a table's
	// fleet.group) over a sliding hour, in workers; a group not named has
	// no bound of its own.
	GroupQuotas map[string]float64 `json:"group_quotas,omitempty"`
	// Events subscribes the daemon to the stores' change notifications
	// (an `events {}` block inside the daemon block); URL "" is off.
	Events Events `json:"events"`
}

// DefaultReconcileInterval is the poll period of every table while change
// events are on: the reconciliation that catches lost events.
const DefaultReconcileInterval = 10 * time.Minute

// Events are the settings of the daemon's change-event subscription
// (package events): a notification of a new commit of a watched table
// polls that table at once, and the periodic poll slows to
// ReconcileInterval.
type Events struct {
	// URL is the subscription's gocloud.dev/pubsub URL (awssqs://,
	// gcppubsub://, azuresb://, rabbit://, mem://); "" turns events off.
	URL string `json:"url,omitempty"`
	// ReconcileInterval replaces Daemon.Poll as the period of every
	// table's poll while events are on (default DefaultReconcileInterval).
	ReconcileInterval time.Duration `json:"reconcile_interval,omitempty"`
}

// Enabled reports whether the daemon subscribes to change events.
func (e Events) Enabled() bool { return e.URL != "" }

// PollInterval is the period of every table's poll: Poll, or the
// reconciling interval when change events are on.
func (d Daemon) PollInterval() time.Duration {
	if d.Events.Enabled() {
		return d.Events.ReconcileInterval
	}
	return d.Poll
}

// minAttemptStaleAfter is the shortest AttemptStaleAfter: five heartbeats
// of a live attempt, so that a slow store or a paused process does not make
// a live run's outputs look abandoned.
const minAttemptStaleAfter = 5 * attempt.DefaultHeartbeat

// Sizes used by the defaults.
const (
	KiB = units.KiB
	MiB = units.MiB
	GiB = units.GiB
)

// DefaultPolicy returns the defaults every table starts from. The sizes,
// ratios, settle window and job order come from planner.DefaultPolicy (the
// one home of compaction defaults); the daemon-only fields (triggers,
// concurrency, compression) are set here.
func DefaultPolicy() Policy {
	pp := planner.DefaultPolicy()
	return Policy{
		Strategy:            Strategy(pp.Strategy),
		Enabled:             true,
		Concurrency:         1,
		Compression:         "zstd",
		TargetFileSize:      pp.TargetFileSize,
		MinFileSize:         pp.MinFileSize,
		MaxDeletedRowsRatio: pp.MaxDeletedRowsRatio,
		SettleWindow:        pp.SettleWindow,
		MaxBytesPerRun:      pp.MaxBytesPerRun,
		MaxJobsPerRun:       pp.MaxJobsPerRun,
		JobOrder:            string(pp.JobOrder),
		Clustering: Clustering{
			MaxUnclusteredBytes:  pp.MaxUnclusteredBytes,
			MaxRelativeFileRange: pp.MaxRelativeFileRange,
			MinCubeSize:          pp.MinCubeSize,
			CubeMergeMinCubes:    pp.CubeMergeMinCubes,
		},
		Triggers: Triggers{
			SmallFiles:          50,
			DeletedRowsRatio:    0.05,
			UnclusteredBytes:    0,
			MaxTimeSinceLastRun: 24 * time.Hour,
		},
		Checkpoint: Checkpoint{Enabled: true, CatchUp: true},
		LogCleanup: LogCleanup{Enabled: true},
		Fleet:      Fleet{Quota: DefaultFleetQuota},
	}
}

// PlannerPolicy maps the policy onto the planner's Policy, planning as of
// now. Column names are dotted paths ("a.b" is field b of struct a).
func (p *Policy) PlannerPolicy(now time.Time) planner.Policy {
	pp := planner.Policy{
		Strategy:             planner.Strategy(p.Strategy),
		TargetFileSize:       p.TargetFileSize,
		MinFileSize:          p.MinFileSize,
		MaxDeletedRowsRatio:  p.MaxDeletedRowsRatio,
		SettleWindow:         p.SettleWindow,
		MaxBytesPerRun:       p.MaxBytesPerRun,
		MaxJobsPerRun:        p.MaxJobsPerRun,
		JobOrder:             planner.JobOrder(p.JobOrder),
		MaxUnclusteredBytes:  p.Clustering.MaxUnclusteredBytes,
		MaxRelativeFileRange: p.Clustering.MaxRelativeFileRange,
		MinCubeSize:          p.Clustering.MinCubeSize,
		CubeMergeMinCubes:    p.Clustering.CubeMergeMinCubes,
		Now:                  now,
	}
	for _, c := range p.Clustering.Columns {
		pp.ClusteringColumns = append(pp.ClusteringColumns, strings.Split(c, "."))
	}
	if p.Clustering.LightweightColumn != "" {
		pp.LightweightColumn = strings.Split(p.Clustering.LightweightColumn, ".")
	}
	return pp
}

// WriterOptions layers the policy's rewrite settings (target file size,
// compression, concurrency) over base, where base leaves them unset: what
// every operation that rewrites data files (compaction, retention's
// copy-on-write) hands the writer.
func (p *Policy) WriterOptions(base writer.Options) writer.Options {
	if p.TargetFileSize > 0 && base.TargetFileSize == 0 {
		base.TargetFileSize = p.TargetFileSize
	}
	if base.Compression == "" {
		base.Compression = p.Compression
	}
	if base.MaxConcurrentJobs == 0 {
		base.MaxConcurrentJobs = p.Concurrency
	}
	return base
}

// DefaultDaemon returns the daemon defaults.
func DefaultDaemon() Daemon {
	return Daemon{
		Poll:            time.Minute,
		Workers:         2,
		HTTP:            "127.0.0.1:9464",
		ShutdownTimeout: 30 * time.Second,
		BackoffBase:     5 * time.Second,
		BackoffMax:      10 * time.Minute,
		LeaseTTL:        time.Minute,
		// The one home of the window is the attempt package.
		AttemptStaleAfter: attempt.DefaultStaleAfter,
	}
}

// Sentinel errors returned (wrapped) by Validate.
var (
	ErrMissingURL   = errors.New("url is required")
	ErrBadURL       = errors.New("bad url")
	ErrBadSchedule  = errors.New("bad schedule")
	ErrBadStrategy  = errors.New("unknown strategy")
	ErrOutOfRange   = errors.New("value out of range")
	ErrBadEnum      = errors.New("unknown value")
	ErrNeedsColumns = errors.New("strategy needs clustering columns")
)

// cronParser accepts standard 5-field cron plus descriptors (@hourly); the
// @every form is parsed by ParseSchedule itself.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// cronFields names the five fields of a cron spec and their ranges, in order.
var cronFields = [5]struct{ name, want string }{
	{"minute", "0-59"},
	{"hour", "0-23"},
	{"day of month", "1-31"},
	{"month", "1-12 or JAN-DEC"},
	{"day of week", "0-6 or SUN-SAT"},
}

// ParseSchedule parses a cron expression or descriptor as the daemon does.
// "@every D" takes the policy duration syntax (30s, 5m, 2h, 7d) and must be
// at least one second: cron's own @every would run a zero or negative
// interval every second. A bad 5-field spec is reported with the field that
// is out of range and the range it takes.
func ParseSchedule(s string) (cron.Schedule, error) {
	spec := strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(spec, "@every"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
		arg := strings.TrimSpace(rest)
		d, err := units.ParseDuration(arg)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%w %q: @every takes a duration such as 30s, 5m, 2h or 7d, got %q", ErrBadSchedule, s, arg)
		case d <= 0:
			return nil, fmt.Errorf("%w %q: @every needs a positive interval, got %s", ErrBadSchedule, s, arg)
		case d < time.Second:
			return nil, fmt.Errorf("%w %q: @every needs an interval of at least 1s, got %s", ErrBadSchedule, s, arg)
		}
		return cron.Every(d), nil
	}
	if strings.HasPrefix(spec, "@") {
		sch, err := cronParser.Parse(spec)
		if err != nil {
			return nil, fmt.Errorf("%w %q: unknown descriptor (want @every DURATION, @hourly, @daily, @midnight, @weekly, @monthly, @yearly or @annually)", ErrBadSchedule, s)
		}
		return sch, nil
	}
	fields := strings.Fields(spec)
	if len(fields) > 0 && (strings.HasPrefix(fields[0], "TZ=") || strings.HasPrefix(fields[0], "CRON_TZ=")) {
		fields = fields[1:]
	}
	if len(fields) != len(cronFields) {
		return nil, fmt.Errorf("%w %q: want 5 fields (minute hour day-of-month month day-of-week) or a descriptor such as @every 5m, got %d", ErrBadSchedule, s, len(fields))
	}
	sch, err := cronParser.Parse(spec)
	if err == nil {
		return sch, nil
	}
	// Find the field to blame: parse each one alone among wildcards.
	for i, f := range fields {
		probe := []string{"*", "*", "*", "*", "*"}
		probe[i] = f
		if _, ferr := cronParser.Parse(strings.Join(probe, " ")); ferr != nil {
			return nil, fmt.Errorf("%w %q: %s field %q: %v (want %s)", ErrBadSchedule, s, cronFields[i].name, f, ferr, cronFields[i].want)
		}
	}
	return nil, fmt.Errorf("%w %q: %v", ErrBadSchedule, s, err)
}

// neverFires reports whether a valid schedule has no run in the next five
// years (cron's own search horizon), e.g. "0 0 31 2 *".
func neverFires(s string, now time.Time) bool {
	sch, err := ParseSchedule(s)
	return err == nil && sch.Next(now).IsZero()
}

// addFunc records a validation error of attribute attr.
type addFunc func(attr string, sentinel error, format string, args ...any)

// notNegative records an ErrOutOfRange for attr when v < 0.
func notNegative[T ~int | ~int64](add addFunc, attr string, v T) {
	if v < 0 {
		add(attr, ErrOutOfRange, "%v (want >= 0)", v)
	}
}

// ratio records an ErrOutOfRange for attr when v is outside [0, 1].
func ratio(add addFunc, attr string, v float64) {
	if v < 0 || v > 1 {
		add(attr, ErrOutOfRange, "%v (want [0, 1])", v)
	}
}

// Validate checks a policy; the error names the offending attribute. Each
// error wraps one of the sentinel errors above.
func (p *Policy) Validate() error {
	var errs []error
	var add addFunc = func(attr string, sentinel error, format string, args ...any) {
		errs = append(errs, &AttrError{Attr: attr, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)})
	}
	if p.URL == "" {
		add("url", ErrMissingURL, "table %q", p.Name)
	} else if !strings.Contains(p.URL, "://") {
		// A plain path, as the command line takes; relative ones would
		// depend on the daemon's working directory.
		if !filepath.IsAbs(p.URL) {
			add("url", ErrBadURL, "%q is a relative path: write an absolute path, or a URL such as file:///abs/path or s3://bucket/prefix", p.URL)
		}
	} else if u, err := url.Parse(p.URL); err != nil || u.Scheme == "" {
		add("url", ErrBadURL, "%q needs a scheme such as file:// or s3://, or an absolute path", redact.URL(p.URL))
	}
	if p.Schedule != "" {
		if _, err := ParseSchedule(p.Schedule); err != nil {
			errs = append(errs, &AttrError{Attr: "schedule", Err: err})
		}
	}
	switch p.Strategy {
	case StrategyAuto, StrategyBinpack:
	case StrategyLightweight, StrategyZcube:
		if len(p.Clustering.Columns) == 0 && p.Clustering.LightweightColumn == "" && !p.Clustering.Auto {
			add("strategy", ErrNeedsColumns, "%s needs clustering { columns = [...] }", p.Strategy)
		}
	default:
		add("strategy", ErrBadStrategy, "%q (want auto, binpack, lightweight or zcube)", p.Strategy)
	}
	if p.Concurrency < 1 || p.Concurrency > 64 {
		add("concurrency", ErrOutOfRange, "%d (want 1..64)", p.Concurrency)
	}
	if !contains(compressions, p.Compression) {
		add("compression", ErrBadEnum, "%q (want one of %s)", p.Compression, strings.Join(compressions, ", "))
	}
	if p.TargetFileSize != 0 && p.TargetFileSize < KiB {
		add("target_file_size", ErrOutOfRange, "%d bytes (want 0 for the table property, or at least 1KiB)", p.TargetFileSize)
	}
	if p.MinFileSize < 0 {
		add("min_file_size", ErrOutOfRange, "%d bytes (want >= 0)", p.MinFileSize)
	}
	ratio(add, "max_deleted_rows_ratio", p.MaxDeletedRowsRatio)
	notNegative(add, "settle_window", p.SettleWindow)
	notNegative(add, "max_bytes_per_run", p.MaxBytesPerRun)
	notNegative(add, "max_jobs_per_run", p.MaxJobsPerRun)
	notNegative(add, "commit_every_jobs", p.CommitEveryJobs)
	notNegative(add, "commit_interval", p.CommitInterval)
	if !contains(jobOrders, p.JobOrder) {
		add("job_order", ErrBadEnum, "%q (want one of %s)", p.JobOrder, strings.Join(jobOrders, ", "))
	}
	c := p.Clustering
	notNegative(add, "clustering.max_unclustered_bytes", c.MaxUnclusteredBytes)
	ratio(add, "clustering.max_relative_file_range", c.MaxRelativeFileRange)
	notNegative(add, "clustering.min_cube_size", c.MinCubeSize)
	if c.CubeMergeMinCubes == 1 || c.CubeMergeMinCubes < -1 {
		add("clustering.cube_merge_min_cubes", ErrOutOfRange, "%d (want 0 for the default, >= 2, or -1 for Delta's merge of every partial cube)", c.CubeMergeMinCubes)
	}
	if c.LightweightColumn != "" && len(c.Columns) > 0 && !contains(c.Columns, c.LightweightColumn) {
		add("clustering.lightweight_column", ErrBadEnum, "%q is not one of columns %v", c.LightweightColumn, c.Columns)
	}
	t := p.Triggers
	notNegative(add, "triggers.small_files", t.SmallFiles)
	ratio(add, "triggers.deleted_rows_ratio", t.DeletedRowsRatio)
	notNegative(add, "triggers.unclustered_bytes", t.UnclusteredBytes)
	notNegative(add, "triggers.max_time_since_last_run", t.MaxTimeSinceLastRun)
	if r := p.Retention; r != nil {
		if r.Column == "" {
			add("retention.column", ErrMissingURL, "retention needs a column")
		}
		if r.OlderThan <= 0 {
			add("retention.older_than", ErrOutOfRange, "%v (want > 0)", r.OlderThan)
		}
		if _, ok := units.EpochUnitMicros(r.EpochUnit); r.EpochUnit != "" && !ok {
			add("retention.epoch_unit", ErrBadEnum, "%q (want %s)", r.EpochUnit, strings.Join(units.EpochUnits, ", "))
		}
		if r.TimeZone != "" {
			if _, err := time.LoadLocation(r.TimeZone); err != nil {
				add("retention.time_zone", ErrBadEnum, "%q: %v", r.TimeZone, err)
			}
		}
	}
	if e := p.Executor; e != nil {
		switch e.Kind {
		case ExecutorLocal, ExecutorProcess, ExecutorKubernetes:
		default:
			add("executor.kind", ErrBadEnum, "%q (want local, process or kubernetes)", e.Kind)
		}
		notNegative(add, "executor.min_backlog_bytes", e.MinBacklogBytes)
		if e.Parallelism < 1 || e.Parallelism > 10000 {
			add("executor.parallelism", ErrOutOfRange, "%d (want 1..10000)", e.Parallelism)
		}
		if e.BackoffLimitPerIndex < 0 || e.BackoffLimitPerIndex > 100 {
			add("executor.backoff_limit_per_index", ErrOutOfRange, "%d (want 0..100)", e.BackoffLimitPerIndex)
		}
		notNegative(add, "executor.max_units", e.MaxUnits)
	}
	if v := p.Vacuum; v != nil {
		switch v.Mode {
		case VacuumAuto, VacuumLite, VacuumFull:
		default:
			add("vacuum.mode", ErrBadEnum, "%q (want auto, lite or full)", v.Mode)
		}
		if v.Interval <= 0 {
			add("vacuum.interval", ErrOutOfRange, "%v (want > 0)", v.Interval)
		}
		if v.FullInterval < v.Interval {
			add("vacuum.full_interval", ErrOutOfRange, "%v (want >= interval %v)", v.FullInterval, v.Interval)
		}
		notNegative(add, "vacuum.retention", v.Retention)
		if v.ForceRetention && v.Retention == 0 {
			add("vacuum.force_retention", ErrOutOfRange, "force_retention without a retention (set retention, shorter than the table's)")
		}
		if v.Concurrency < 0 || v.Concurrency > 1024 {
			add("vacuum.concurrency", ErrOutOfRange, "%d (want 0..1024)", v.Concurrency)
		}
	}
	if b := p.StatsBackfill; b != nil && b.MaxFiles < 1 {
		add("stats_backfill.max_files", ErrOutOfRange, "%d (want >= 1)", b.MaxFiles)
	}
	if p.Checkpoint.MaxBehind < 0 {
		add("checkpoint.max_behind", ErrOutOfRange, "%d (want >= 0; 0 = the table's delta.checkpointInterval)", p.Checkpoint.MaxBehind)
	}
	if q := p.Fleet.Quota; !(q > 0 && q <= 256) {
		add("fleet.quota", ErrOutOfRange, "%v (want a share of the workers above 0, at most 256)", q)
	}
	if c := p.LogCleanup.Concurrency; c < 0 || c > 1024 {
		add("log_cleanup.concurrency", ErrOutOfRange, "%d (want 0..1024)", c)
	}
	if len(errs) == 0 {
		// The planner has the last word on what it can plan with.
		if err := p.PlannerPolicy(time.Unix(0, 1)).Validate(); err != nil {
			add("policy", err, "table %q", p.Name)
		}
	}
	return errors.Join(errs...)
}

// Validate checks the daemon settings.
func (d *Daemon) Validate() error {
	var errs []error
	if d.Poll < time.Second {
		errs = append(errs, &AttrError{Attr: "poll", Err: fmt.Errorf("%w: %v (want >= 1s)", ErrOutOfRange, d.Poll)})
	}
	if d.Workers < 1 || d.Workers > 256 {
		errs = append(errs, &AttrError{Attr: "workers", Err: fmt.Errorf("%w: %d (want 1..256)", ErrOutOfRange, d.Workers)})
	}
	if d.ShutdownTimeout <= 0 {
		errs = append(errs, &AttrError{Attr: "shutdown_timeout", Err: fmt.Errorf("%w: %v (want > 0)", ErrOutOfRange, d.ShutdownTimeout)})
	}
	if d.BackoffBase <= 0 || d.BackoffMax < d.BackoffBase {
		errs = append(errs, &AttrError{Attr: "backoff_max", Err: fmt.Errorf("%w: base %v, max %v (want 0 < base <= max)", ErrOutOfRange, d.BackoffBase, d.BackoffMax)})
	}
	if d.LeaseTTL < 3*time.Second {
		errs = append(errs, &AttrError{Attr: "lease_ttl", Err: fmt.Errorf("%w: %v (want >= 3s)", ErrOutOfRange, d.LeaseTTL)})
	}
	if d.Events.Enabled() {
		if err := events.CheckURL(d.Events.URL); err != nil {
			errs = append(errs, &AttrError{Attr: "events.url", Err: fmt.Errorf("%w: %w", ErrBadURL, err)})
		}
		if d.Events.ReconcileInterval < time.Second {
			errs = append(errs, &AttrError{Attr: "events.reconcile_interval", Err: fmt.Errorf("%w: %v (want >= 1s)", ErrOutOfRange, d.Events.ReconcileInterval)})
		}
	}
	if d.AttemptStaleAfter < minAttemptStaleAfter {
		errs = append(errs, &AttrError{Attr: "attempt_stale_after", Err: fmt.Errorf("%w: %v (want >= %v: live runs rewrite their intent records every %v)",
			ErrOutOfRange, d.AttemptStaleAfter, minAttemptStaleAfter, attempt.DefaultHeartbeat)})
	}
	for g, q := range d.GroupQuotas {
		if g == "" || !(q > 0 && q <= 256) {
			errs = append(errs, &AttrError{Attr: "group_quotas", Err: fmt.Errorf("%w: group %q: %v (want a named group and a share of the workers above 0, at most 256)", ErrOutOfRange, g, q)})
		}
	}
	return errors.Join(errs...)
}

// AttrError is a validation error of one attribute.
type AttrError struct {
	// Attr is the attribute path, e.g. "triggers.small_files".
	Attr string
	// Err wraps a sentinel error.
	Err error
}

// Error names the attribute and the problem.
func (e *AttrError) Error() string { return e.Attr + ": " + e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *AttrError) Unwrap() error { return e.Err }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
