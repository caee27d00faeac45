package httpapi

import (
	"github.com/compactord/compactord/autocluster"
	"net/http"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/compactord/compactord/checkpoint"
	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/events"
	"github.com/compactord/compactord/internal/attemptsweep"
	"github.com/compactord/compactord/logcleanup"
	"github.com/compactord/compactord/retention"
	"github.com/compactord/compactord/scheduler"
	"github.com/compactord/compactord/statsbackfill"
	"github.com/compactord/compactord/vacuum"
)

// /metrics is served by prometheus/client_golang: a registry of the
// process and Go runtime collectors plus statusCollector, which builds the
// compactord_* series from scheduler.Status at each scrape, so a table's
// series vanish the moment its policy goes away (there is nothing to forget
// to unregister).

// Counters are process-wide counters not tied to a table.
type Counters struct {
	ReloadsOK     int64
	ReloadsFailed int64
	SignalRuns    int64
	// Events are the change-event consumer's counters (nil when events
	// are off: the series are then 0).
	Events *events.Stats
}

// eventOutcomes are the outcome labels of compactord_events_total.
var eventOutcomes = []struct {
	label string
	value func(events.Stats) int64
}{
	{"received", func(s events.Stats) int64 { return s.Received }},
	{"polled", func(s events.Stats) int64 { return s.Polled }},
	{"outside_tables", func(s events.Stats) int64 { return s.Outside }},
	{"ignored", func(s events.Stats) int64 { return s.Ignored }},
	{"malformed", func(s events.Stats) int64 { return s.Malformed }},
	{"poll_error", func(s events.Stats) int64 { return s.PollErrors }},
	{"subscription_error", func(s events.Stats) int64 { return s.SubscriptionErrors }},
}

var tableStates = []string{scheduler.StateIdle, scheduler.StateQueued, scheduler.StateRunning,
	scheduler.StateBackoff, scheduler.StateWaiting, scheduler.StateHalted, scheduler.StateDisabled}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// tableSeries is a family with one sample per table, labelled "table".
type tableSeries struct {
	name, help string
	typ        prometheus.ValueType
	value      func(scheduler.TableStatus) float64
}

const (
	counter = prometheus.CounterValue
	gauge   = prometheus.GaugeValue
)

// countedSeries are the per-table counters the operations count under a
// key of scheduler.Counters.Counts (the key is the operation's Count*
// constant).
var countedSeries = []struct{ name, help, key string }{
	{"compactord_reconciliations_total", "Concurrent deletion vectors remapped onto compaction outputs.", compaction.CountReconciliations},
	{"compactord_reconciled_rows_total", "Concurrently deleted rows carried onto compaction outputs.", compaction.CountReconciledRows},
	{"compactord_dropped_jobs_total", "Planned jobs left out of a commit (true conflicts, failed rewrites).", compaction.CountJobsDropped},
	{"compactord_expired_rows_total", "Rows removed by retention deletes.", retention.CountRowsExpired},
	{"compactord_checkpoints_written_total", "Checkpoints the daemon wrote (after its own commits on multiples of delta.checkpointInterval, and catch-ups).", checkpoint.CountWritten},
	{"compactord_checkpoints_failed_total", "Checkpoints that failed (the commits stand; the next run retries).", checkpoint.CountFailed},
	{"compactord_log_files_deleted_total", "Expired log files (commits, checkpoints, checksums, compaction files, sidecars) deleted by log cleanup.", logcleanup.CountFilesDeleted},
	{"compactord_vacuum_deleted_files_total", "Files (and empty directories) deleted by vacuums and temp sweeps.", vacuum.CountFilesDeleted},
	{"compactord_vacuum_deleted_bytes_total", "Bytes of files deleted by vacuums and temp sweeps.", vacuum.CountBytesDeleted},
	{"compactord_vacuum_orphans_total", "Deleted files that no action of the log named (abandoned writes, temp leftovers).", vacuum.CountOrphans},
	{"compactord_swept_attempts_total", "Dead attempts of killed runs (their intent records) swept at the start of a compaction or retention run.", attemptsweep.CountAttempts},
	{"compactord_swept_attempt_objects_total", "Uncommitted objects of dead attempts (and their upload temp files) deleted at the start of a run.", attemptsweep.CountObjects},
	{"compactord_stats_backfilled_files_total", "Data files that got statistics from a stats backfill.", statsbackfill.CountFilesBackfilled},
	{"compactord_clustering_key_changes_total", "Clustering keys set by CLUSTER BY AUTO (clustering { columns = \"auto\" }).", autocluster.CountKeyChanges},
	{"compactord_clustering_key_refusals_total", "Clustering keys CLUSTER BY AUTO chose but could not set (the table's protocol or layout refused them).", autocluster.CountRefused},
}

// schedulerSeries are the per-table counters the scheduler keeps in
// fields of scheduler.Counters.
var schedulerSeries = []struct {
	name, help string
	value      func(scheduler.Counters) int64
}{
	{"compactord_rewritten_files_total", "Data files removed by committed compactions.", func(c scheduler.Counters) int64 { return c.FilesRewritten }},
	{"compactord_rewritten_bytes_total", "Bytes of data files removed by committed compactions.", func(c scheduler.Counters) int64 { return c.BytesRewritten }},
	{"compactord_written_files_total", "Data files added by committed compactions.", func(c scheduler.Counters) int64 { return c.FilesWritten }},
	{"compactord_written_bytes_total", "Bytes of data files added by committed compactions.", func(c scheduler.Counters) int64 { return c.BytesWritten }},
	{"compactord_polls_total", "Log polls.", func(c scheduler.Counters) int64 { return c.Polls }},
	{"compactord_poll_errors_total", "Log polls that failed.", func(c scheduler.Counters) int64 { return c.PollErrors }},
	{"compactord_coalesced_triggers_total", "Triggers merged into an already pending run.", func(c scheduler.Counters) int64 { return c.Coalesced }},
}

// backlogSeries are the per-table gauges of the table's backlog (0 until
// the first poll measured one).
var backlogSeries = []struct {
	name, help string
	value      func(*scheduler.Backlog) float64
}{
	{"compactord_backlog_small_files", "Compaction candidates waiting (small files past the settle window).", func(b *scheduler.Backlog) float64 { return float64(b.MergeableFiles) }},
	{"compactord_backlog_small_bytes", "Bytes of compaction candidates waiting.", func(b *scheduler.Backlog) float64 { return float64(b.MergeableBytes) }},
	{"compactord_table_files", "Live data files.", func(b *scheduler.Backlog) float64 { return float64(b.Files) }},
	{"compactord_table_bytes", "Bytes of live data files.", func(b *scheduler.Backlog) float64 { return float64(b.Bytes) }},
	{"compactord_table_deleted_rows_ratio", "Deletion-vector deleted rows over physical rows.", func(b *scheduler.Backlog) float64 { return b.DeletedRowsRatio }},
}

// stateSeries are the per-table gauges of the table's state.
var stateSeries = []tableSeries{
	{"compactord_checkpoint_duration_seconds_total", "Time spent writing checkpoints.", counter,
		func(t scheduler.TableStatus) float64 {
			return float64(t.Counters.Counts[checkpoint.CountDurationMillis]) / 1000
		}},
	{"compactord_table_version", "Latest table version seen by the poll.", gauge,
		func(t scheduler.TableStatus) float64 { return float64(t.LastVersion) }},
	{"compactord_table_halted", "1 when the table is halted (an invariant would break; operator action needed).", gauge,
		func(t scheduler.TableStatus) float64 { return b2f(t.Halted) }},
	{"compactord_table_enabled", "1 when the table's policy is enabled.", gauge,
		func(t scheduler.TableStatus) float64 { return b2f(t.Enabled) }},
	{"compactord_quarantined_files", "Data files quarantined (skipped) after being found corrupt, or missing from the store for several runs.", gauge,
		func(t scheduler.TableStatus) float64 { return float64(len(t.Quarantined)) }},
	{"compactord_consecutive_failures", "Failed runs since the last success.", gauge,
		func(t scheduler.TableStatus) float64 { return float64(t.Failures) }},
	{"compactord_table_queue_score", "Priority of the table's run waiting for a worker (benefit per cost raised by its wait); 0 while none waits.", gauge,
		func(t scheduler.TableStatus) float64 {
			if t.Fleet.Queued == nil {
				return 0
			}
			return t.Fleet.Queued.Priority
		}},
	{"compactord_table_quota_occupation", "Worker time the table used in the last hour over its quota; above 1 it waits while tables under quota wait.", gauge,
		func(t scheduler.TableStatus) float64 { return t.Fleet.QuotaOccupation }},
}

// perTableSeries are the single-valued per-table families: the counted,
// scheduler and backlog series as tableSeries, then stateSeries.
func perTableSeries() []tableSeries {
	var out []tableSeries
	for _, s := range countedSeries {
		out = append(out, tableSeries{s.name, s.help, counter, func(t scheduler.TableStatus) float64 { return float64(t.Counters.Counts[s.key]) }})
	}
	for _, s := range schedulerSeries {
		out = append(out, tableSeries{s.name, s.help, counter, func(t scheduler.TableStatus) float64 { return float64(s.value(t.Counters)) }})
	}
	for _, s := range backlogSeries {
		out = append(out, tableSeries{s.name, s.help, gauge, func(t scheduler.TableStatus) float64 {
			if t.Backlog == nil {
				return 0
			}
			return s.value(t.Backlog)
		}})
	}
	return append(out, stateSeries...)
}

// The families with labels beyond "table" (or none).
var (
	descBuildInfo = prometheus.NewDesc("compactord_build_info", "Build information; always 1.", []string{"version"}, nil)
	descTables    = prometheus.NewDesc("compactord_tables", "Tables with a loaded policy.", nil, nil)
	descQueue     = prometheus.NewDesc("compactord_queue_length", "Runs due and waiting for a worker (the fleet queue).", nil, nil)
	descReloads   = prometheus.NewDesc("compactord_policy_reloads_total", "Policy reloads by result.", []string{"result"}, nil)
	descRuns      = prometheus.NewDesc("compactord_runs_total", "Compaction runs by result.", []string{"table", "result"}, nil)
	descConflicts = prometheus.NewDesc("compactord_commit_conflicts_total", "Concurrent commits met while committing, by kind.", []string{"table", "kind"}, nil)
	descState     = prometheus.NewDesc("compactord_table_state", "1 for the table's current state (idle, queued, running, backoff, waiting, halted, disabled).", []string{"table", "state"}, nil)
	descDuration  = prometheus.NewDesc("compactord_run_duration_seconds", "Duration of compaction runs.", []string{"table"}, nil)
	descEvents    = prometheus.NewDesc("compactord_events_total", "Change notifications received (received), the polls they asked for (polled), the objects they named outside every watched table (outside_tables, dropped) or inside one but no new commit (ignored, with the stores' test messages), messages in no known format (malformed), failed polls (poll_error, delivered again) and subscription failures (subscription_error); all 0 without an events block.", []string{"outcome"}, nil)
	// The next two are served only for tables that have a value.
	descLastSuccess = prometheus.NewDesc("compactord_last_success_timestamp_seconds", "End of the table's last successful run (Unix time); absent until one.", []string{"table"}, nil)
	descExpected    = prometheus.NewDesc("compactord_expected_run_interval_seconds", "The policy's triggers.max_time_since_last_run: a run is due at least this often while small files wait; absent when unset.", []string{"table"}, nil)
)

// MetricNames lists every compactord_* family /metrics can serve
// (histograms by their base name); the monitoring kit's check holds its
// rules and dashboard to it.
func MetricNames() []string {
	names := []string{"compactord_build_info", "compactord_tables", "compactord_queue_length", "compactord_policy_reloads_total", "compactord_events_total",
		"compactord_runs_total", "compactord_commit_conflicts_total", "compactord_table_state", "compactord_run_duration_seconds",
		"compactord_last_success_timestamp_seconds", "compactord_expected_run_interval_seconds"}
	for _, s := range perTableSeries() {
		names = append(names, s.name)
	}
	sort.Strings(names)
	return names
}

// statusCollector is the prometheus.Collector of the compactord_* series.
// It is unchecked (Describe sends nothing): its series follow the loaded
// policies.
type statusCollector struct {
	version  string
	status   func() []scheduler.TableStatus
	counters func() Counters
	// interval is a table's policy max_time_since_last_run (0: unset).
	interval func(table string) time.Duration
	series   []tableSeries
	descs    []*prometheus.Desc // parallel to series
}

func newStatusCollector(version string, status func() []scheduler.TableStatus, counters func() Counters, interval func(string) time.Duration) *statusCollector {
	c := &statusCollector{version: version, status: status, counters: counters, interval: interval}
	c.series = perTableSeries()
	for _, s := range c.series {
		c.descs = append(c.descs, prometheus.NewDesc(s.name, s.help, []string{"table"}, nil))
	}
	return c
}

// Describe sends nothing: the collector is unchecked.
func (c *statusCollector) Describe(chan<- *prometheus.Desc) {}

// Collect sends the series of the daemon and of every loaded table.
func (c *statusCollector) Collect(ch chan<- prometheus.Metric) {
	ts := c.status()
	dc := c.counters()
	ch <- prometheus.MustNewConstMetric(descBuildInfo, gauge, 1, c.version)
	ch <- prometheus.MustNewConstMetric(descTables, gauge, float64(len(ts)))
	queued := 0
	for _, t := range ts {
		if t.Fleet.Queued != nil {
			queued++
		}
	}
	ch <- prometheus.MustNewConstMetric(descQueue, gauge, float64(queued))
	ch <- prometheus.MustNewConstMetric(descReloads, counter, float64(dc.ReloadsOK), "success")
	ch <- prometheus.MustNewConstMetric(descReloads, counter, float64(dc.ReloadsFailed), "failure")
	var es events.Stats
	if dc.Events != nil {
		es = *dc.Events
	}
	for _, o := range eventOutcomes {
		ch <- prometheus.MustNewConstMetric(descEvents, counter, float64(o.value(es)), o.label)
	}
	for _, t := range ts {
		for _, r := range scheduler.Results {
			ch <- prometheus.MustNewConstMetric(descRuns, counter, float64(t.Counters.Runs[r]), t.Name, r)
		}
		for k, v := range t.Counters.Conflicts {
			ch <- prometheus.MustNewConstMetric(descConflicts, counter, float64(v), t.Name, k)
		}
		for i, s := range c.series {
			ch <- prometheus.MustNewConstMetric(c.descs[i], s.typ, s.value(t), t.Name)
		}
		for _, st := range tableStates {
			ch <- prometheus.MustNewConstMetric(descState, gauge, b2f(t.State == st), t.Name, st)
		}
		if t.LastSuccess != nil {
			ch <- prometheus.MustNewConstMetric(descLastSuccess, gauge, float64(t.LastSuccess.UnixNano())/1e9, t.Name)
		}
		if iv := c.interval(t.Name); iv > 0 {
			ch <- prometheus.MustNewConstMetric(descExpected, gauge, iv.Seconds(), t.Name)
		}
		cn := t.Counters
		buckets := make(map[float64]uint64, len(scheduler.DurationBuckets))
		for i, ub := range scheduler.DurationBuckets {
			if i < len(cn.DurationBuckets) {
				buckets[ub] = uint64(cn.DurationBuckets[i])
			}
		}
		ch <- prometheus.MustNewConstHistogram(descDuration, uint64(cn.DurationCount), cn.DurationSum, buckets, t.Name)
	}
}

// metricsHandler serves /metrics: the process and Go runtime collectors and
// the daemon's own series.
func metricsHandler(version string, status func() []scheduler.TableStatus, counters func() Counters, interval func(string) time.Duration) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewGoCollector(),
		newStatusCollector(version, status, counters, interval),
	)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
