package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/compactord/compactord/checkpoint"
	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/logcleanup"
	"github.com/compactord/compactord/retention"
	"github.com/compactord/compactord/scheduler"
	"github.com/compactord/compactord/statsbackfill"
	"github.com/compactord/compactord/vacuum"
)

// The Prometheus text exposition is written by hand: the set of series is
// small, fixed and derived from scheduler.Status, so a table's series vanish
// the moment its policy goes away (there is no registry to forget to clean).

// daemonCounters are process-wide counters not tied to a table.
type daemonCounters struct {
	ReloadsOK     int64
	ReloadsFailed int64
	SignalRuns    int64
}

var tableStates = []string{scheduler.StateIdle, scheduler.StateQueued, scheduler.StateRunning,
	scheduler.StateBackoff, scheduler.StateHalted, scheduler.StateDisabled}

// expo accumulates metric families in a fixed order.
type expo struct {
	b strings.Builder
}

func (e *expo) family(name, typ, help string) {
	fmt.Fprintf(&e.b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

func (e *expo) sample(name string, labels []string, v float64) {
	e.b.WriteString(name)
	if len(labels) > 0 {
		e.b.WriteByte('{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				e.b.WriteByte(',')
			}
			e.b.WriteString(labels[i])
			e.b.WriteString(`="`)
			e.b.WriteString(escapeLabel(labels[i+1]))
			e.b.WriteByte('"')
		}
		e.b.WriteByte('}')
	}
	e.b.WriteByte(' ')
	e.b.WriteString(formatValue(v))
	e.b.WriteByte('\n')
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

func formatValue(v float64) string {
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// perTable writes one family with one sample per table.
func (e *expo) perTable(name, typ, help string, ts []scheduler.TableStatus, f func(scheduler.TableStatus) float64) {
	e.family(name, typ, help)
	for _, t := range ts {
		e.sample(name, []string{"table", t.Name}, f(t))
	}
}

// writeMetrics writes the exposition for the given table states (sorted by
// name, as scheduler.Status returns them).
func writeMetrics(w io.Writer, ts []scheduler.TableStatus, dc daemonCounters) error {
	var e expo
	e.family("compactord_build_info", "gauge", "Build information; always 1.")
	e.sample("compactord_build_info", []string{"version", version}, 1)
	e.family("compactord_tables", "gauge", "Tables with a loaded policy.")
	e.sample("compactord_tables", nil, float64(len(ts)))
	e.family("compactord_policy_reloads_total", "counter", "Policy reloads by result.")
	e.sample("compactord_policy_reloads_total", []string{"result", "success"}, float64(dc.ReloadsOK))
	e.sample("compactord_policy_reloads_total", []string{"result", "failure"}, float64(dc.ReloadsFailed))

	e.family("compactord_runs_total", "counter", "Compaction runs by result.")
	for _, t := range ts {
		for _, r := range scheduler.Results {
			e.sample("compactord_runs_total", []string{"table", t.Name, "result", r}, float64(t.Counters.Runs[r]))
		}
	}
	e.perTable("compactord_rewritten_files_total", "counter", "Data files removed by committed compactions.", ts,
		func(t scheduler.TableStatus) float64 { return float64(t.Counters.FilesRewritten) })
	e.perTable("compactord_rewritten_bytes_total", "counter", "Bytes of data files removed by committed compactions.", ts,
		func(t scheduler.TableStatus) float64 { return float64(t.Counters.BytesRewritten) })
	e.perTable("compactord_written_files_total", "counter", "Data files added by committed compactions.", ts,
		func(t scheduler.TableStatus) float64 { return float64(t.Counters.FilesWritten) })
	e.perTable("compactord_written_bytes_total", "counter", "Bytes of data files added by committed compactions.", ts,
		func(t scheduler.TableStatus) float64 { return float64(t.Counters.BytesWritten) })

	e.family("compactord_commit_conflicts_total", "counter", "Concurrent commits met while committing, by kind.")
	for _, t := range ts {
		kinds := make([]string, 0, len(t.Counters.Conflicts))
		for k := range t.Counters.Conflicts {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		for _, k := range kinds {
			e.sample("compactord_commit_conflicts_total", []string{"table", t.Name, "kind", k}, float64(t.Counters.Conflicts[k]))
		}
	}
	e.perTable("compactord_reconciliations_total", "counter", "Concurrent deletion vectors remapped onto compaction outputs.", ts,
		func(t scheduler.TableStatus) float64 {
			return float64(t.Counters.Counts[compaction.CountReconciliations])
		})
	e.perTable("compactord_reconciled_rows_total", "counter", "Concurrently deleted rows carried onto compaction outputs.", ts,
		func(t scheduler.TableStatus) float64 {
			return float64(t.Counters.Counts[compaction.CountReconciledRows])
		})
	e.perTable("compactord_expired_rows_total", "counter", "Rows removed by retention deletes.", ts,
		func(t scheduler.TableStatus) float64 { return float64(t.Counters.Counts[retention.CountRowsExpired]) })
	e.perTable("compactord_checkpoints_written_total", "counter", "Checkpoints the daemon wrote (after its own commits on multiples of delta.checkpointInterval, and catch-ups).", ts,
		func(t scheduler.TableStatus) float64 { return float64(t.Counters.Counts[checkpoint.CountWritten]) })
	e.perTable("compactord_checkpoints_failed_total", "counter", "Checkpoints that failed (the commits stand; the next run retries).", ts,
		func(t scheduler.TableStatus) float64 { return float64(t.Counters.Counts[checkpoint.CountFailed]) })
	e.perTable("compactord_checkpoint_duration_seconds_total", "counter", "Time spent writing checkpoints.", ts,
		func(t scheduler.TableStatus) float64 {
			return float64(t.Counters.Counts[checkpoint.CountDurationMillis]) / 1000
		})
	e.perTable("compactord_log_files_deleted_total", "counter", "Expired log files (commits, checkpoints, checksums, compaction files, sidecars) deleted by log cleanup.", ts,
		func(t scheduler.TableStatus) float64 { return float64(t.Counters.Counts[logcleanup.CountFilesDeleted]) })
	e.perTable("compactord_vacuum_deleted_files_total", "counter", "Files (and empty directories) deleted by vacuums and temp sweeps.", ts,
		func(t scheduler.TableStatus) float64 { return float64(t.Counters.Counts[vacuum.CountFilesDeleted]) })
	e.perTable("compactord_vacuum_deleted_bytes_total", "counter", "Bytes of files deleted by vacuums and temp sweeps.", ts,
		func(t scheduler.TableStatus) float64 { return float64(t.Counters.Counts[vacuum.CountBytesDeleted]) })
	e.perTable("compactord_vacuum_orphans_total", "counter", "Deleted files that no action of the log named (abandoned writes, temp leftovers).", ts,
		func(t scheduler.TableStatus) float64 { return float64(t.Counters.Counts[vacuum.CountOrphans]) })
	e.perTable("compactord_stats_backfilled_files_total", "counter", "Data files that got statistics from a stats backfill.", ts,
		func(t scheduler.TableStatus) float64 {
			return float64(t.Counters.Counts[statsbackfill.CountFilesBackfilled])
		})
	e.perTable("compactord_dropped_jobs_total", "counter", "Planned jobs left out of a commit (true conflicts, failed rewrites).", ts,
		func(t scheduler.TableStatus) float64 { return float64(t.Counters.Counts[compaction.CountJobsDropped]) })
	e.perTable("compactord_polls_total", "counter", "Log polls.", ts,
		func(t scheduler.TableStatus) float64 { return float64(t.Counters.Polls) })
	e.perTable("compactord_poll_errors_total", "counter", "Log polls that failed.", ts,
		func(t scheduler.TableStatus) float64 { return float64(t.Counters.PollErrors) })
	e.perTable("compactord_coalesced_triggers_total", "counter", "Triggers merged into an already pending run.", ts,
		func(t scheduler.TableStatus) float64 { return float64(t.Counters.Coalesced) })

	backlog := func(f func(b *scheduler.Backlog) float64) func(scheduler.TableStatus) float64 {
		return func(t scheduler.TableStatus) float64 {
			if t.Backlog == nil {
				return 0
			}
			return f(t.Backlog)
		}
	}
	e.perTable("compactord_backlog_small_files", "gauge", "Compaction candidates waiting (small files past the settle window).", ts,
		backlog(func(b *scheduler.Backlog) float64 { return float64(b.SmallFiles) }))
	e.perTable("compactord_backlog_small_bytes", "gauge", "Bytes of compaction candidates waiting.", ts,
		backlog(func(b *scheduler.Backlog) float64 { return float64(b.SmallBytes) }))
	e.perTable("compactord_table_files", "gauge", "Live data files.", ts,
		backlog(func(b *scheduler.Backlog) float64 { return float64(b.Files) }))
	e.perTable("compactord_table_bytes", "gauge", "Bytes of live data files.", ts,
		backlog(func(b *scheduler.Backlog) float64 { return float64(b.Bytes) }))
	e.perTable("compactord_table_deleted_rows_ratio", "gauge", "Deletion-vector deleted rows over physical rows.", ts,
		backlog(func(b *scheduler.Backlog) float64 { return b.DeletedRowsRatio }))
	e.perTable("compactord_table_version", "gauge", "Latest table version seen by the poll.", ts,
		func(t scheduler.TableStatus) float64 { return float64(t.LastVersion) })
	e.perTable("compactord_table_halted", "gauge", "1 when the table is halted (an invariant would break; operator action needed).", ts,
		func(t scheduler.TableStatus) float64 { return b2f(t.Halted) })
	e.family("compactord_table_state", "gauge", "1 for the table's current state (idle, queued, running, backoff, halted, disabled).")
	for _, t := range ts {
		for _, st := range tableStates {
			e.sample("compactord_table_state", []string{"table", t.Name, "state", st}, b2f(t.State == st))
		}
	}
	e.perTable("compactord_table_enabled", "gauge", "1 when the table's policy is enabled.", ts,
		func(t scheduler.TableStatus) float64 { return b2f(t.Enabled) })
	e.perTable("compactord_quarantined_files", "gauge", "Data files quarantined (skipped) after being found corrupt.", ts,
		func(t scheduler.TableStatus) float64 { return float64(len(t.Quarantined)) })
	e.perTable("compactord_consecutive_failures", "gauge", "Failed runs since the last success.", ts,
		func(t scheduler.TableStatus) float64 { return float64(t.Failures) })

	e.family("compactord_run_duration_seconds", "histogram", "Duration of compaction runs.")
	for _, t := range ts {
		c := t.Counters
		for i, ub := range scheduler.DurationBuckets {
			e.sample("compactord_run_duration_seconds_bucket", []string{"table", t.Name, "le", formatValue(ub)}, float64(c.DurationBuckets[i]))
		}
		e.sample("compactord_run_duration_seconds_bucket", []string{"table", t.Name, "le", "+Inf"}, float64(c.DurationCount))
		e.sample("compactord_run_duration_seconds_sum", []string{"table", t.Name}, c.DurationSum)
		e.sample("compactord_run_duration_seconds_count", []string{"table", t.Name}, float64(c.DurationCount))
	}
	_, err := io.WriteString(w, e.b.String())
	return err
}
