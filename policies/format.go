package policies

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/compactord/compactord/internal/redact"
	"github.com/compactord/compactord/internal/units"
	"github.com/compactord/compactord/planner"
)

// WriteHCL writes the effective policy set as HCL that LoadDir reads back to
// the same values: every attribute explicit, defaults filled in.
func WriteHCL(w io.Writer, s *Set) error {
	var b strings.Builder
	d := s.Daemon
	fmt.Fprintf(&b, "daemon {\n")
	fmt.Fprintf(&b, "  poll                = %q\n", units.FormatDuration(d.Poll))
	fmt.Fprintf(&b, "  workers             = %d\n", d.Workers)
	fmt.Fprintf(&b, "  http                = %q\n", d.HTTP)
	fmt.Fprintf(&b, "  shutdown_timeout    = %q\n", units.FormatDuration(d.ShutdownTimeout))
	fmt.Fprintf(&b, "  backoff_base        = %q\n", units.FormatDuration(d.BackoffBase))
	fmt.Fprintf(&b, "  backoff_max         = %q\n", units.FormatDuration(d.BackoffMax))
	fmt.Fprintf(&b, "  replica             = %q\n", d.Replica)
	fmt.Fprintf(&b, "  lease_ttl           = %q\n", units.FormatDuration(d.LeaseTTL))
	fmt.Fprintf(&b, "  attempt_stale_after = %q\n", units.FormatDuration(d.AttemptStaleAfter))
	if len(d.GroupQuotas) > 0 {
		groups := make([]string, 0, len(d.GroupQuotas))
		for g := range d.GroupQuotas {
			groups = append(groups, g)
		}
		sort.Strings(groups)
		fmt.Fprintf(&b, "  group_quotas        = {\n")
		for _, g := range groups {
			fmt.Fprintf(&b, "    %q = %s\n", g, fmtFloat(d.GroupQuotas[g]))
		}
		fmt.Fprintf(&b, "  }\n")
	}
	if d.Events.Enabled() {
		fmt.Fprintf(&b, "  events {\n")
		fmt.Fprintf(&b, "    url                = %q\n", redact.URL(d.Events.URL))
		fmt.Fprintf(&b, "    reconcile_interval = %q\n", units.FormatDuration(d.Events.ReconcileInterval))
		fmt.Fprintf(&b, "  }\n")
	}
	fmt.Fprintf(&b, "}\n")
	for _, p := range s.Tables {
		fmt.Fprintf(&b, "\n# %s\ntable %q {\n", p.Source, p.Name)
		fmt.Fprintf(&b, "  url                    = %q\n", p.URL)
		fmt.Fprintf(&b, "  schedule               = %q\n", p.Schedule)
		fmt.Fprintf(&b, "  strategy               = %q\n", p.Strategy)
		fmt.Fprintf(&b, "  enabled                = %t\n", p.Enabled)
		fmt.Fprintf(&b, "  concurrency            = %d\n", p.Concurrency)
		fmt.Fprintf(&b, "  compression            = %q\n", p.Compression)
		unsetSize(&b, "  target_file_size       = ", p.TargetFileSize, fmt.Sprintf("default (the table's delta.targetFileSize, else %s)", units.FormatBytes(planner.DefaultTargetFileSize)))
		fmt.Fprintf(&b, "  min_file_size          = %s\n", hclSize(p.MinFileSize))
		fmt.Fprintf(&b, "  max_deleted_rows_ratio = %s\n", fmtFloat(p.MaxDeletedRowsRatio))
		fmt.Fprintf(&b, "  settle_window          = %q\n", units.FormatDuration(p.SettleWindow))
		unsetSize(&b, "  max_bytes_per_run      = ", p.MaxBytesPerRun, "unlimited")
		if p.MaxJobsPerRun == 0 {
			unset(&b, "  max_jobs_per_run       = ", "unlimited")
		} else {
			fmt.Fprintf(&b, "  max_jobs_per_run       = %d\n", p.MaxJobsPerRun)
		}
		fmt.Fprintf(&b, "  job_order              = %q\n", p.JobOrder)
		if p.CommitEveryJobs == 0 {
			unset(&b, "  commit_every_jobs      = ", "off")
		} else {
			fmt.Fprintf(&b, "  commit_every_jobs      = %d\n", p.CommitEveryJobs)
		}
		if p.CommitInterval == 0 {
			unset(&b, "  commit_interval        = ", "off (with commit_every_jobs off too: one commit at the end of a run)")
		} else {
			fmt.Fprintf(&b, "  commit_interval        = %q\n", units.FormatDuration(p.CommitInterval))
		}
		c := p.Clustering
		fmt.Fprintf(&b, "\n  clustering {\n")
		if c.Auto {
			fmt.Fprintf(&b, "    columns                 = \"auto\"\n")
		} else {
			fmt.Fprintf(&b, "    columns                 = %s\n", fmtStrings(c.Columns))
		}
		fmt.Fprintf(&b, "    lightweight_column      = %q\n", c.LightweightColumn)
		fmt.Fprintf(&b, "    max_unclustered_bytes   = %s\n", hclSize(c.MaxUnclusteredBytes))
		fmt.Fprintf(&b, "    max_relative_file_range = %s\n", fmtFloat(c.MaxRelativeFileRange))
		fmt.Fprintf(&b, "    min_cube_size           = %s\n", hclSize(c.MinCubeSize))
		fmt.Fprintf(&b, "    cube_merge_min_cubes    = %d\n", c.CubeMergeMinCubes)
		fmt.Fprintf(&b, "  }\n")
		t := p.Triggers
		fmt.Fprintf(&b, "\n  triggers {\n")
		fmt.Fprintf(&b, "    small_files             = %d%s\n", t.SmallFiles, offIf(t.SmallFiles == 0))
		fmt.Fprintf(&b, "    deleted_rows_ratio      = %s%s\n", fmtFloat(t.DeletedRowsRatio), offIf(t.DeletedRowsRatio == 0))
		unsetSize(&b, "    unclustered_bytes       = ", t.UnclusteredBytes, "off")
		fmt.Fprintf(&b, "    max_time_since_last_run = %q%s\n", units.FormatDuration(t.MaxTimeSinceLastRun), offIf(t.MaxTimeSinceLastRun == 0))
		fmt.Fprintf(&b, "  }\n")
		if r := p.Retention; r != nil {
			fmt.Fprintf(&b, "\n  retention {\n")
			fmt.Fprintf(&b, "    column        = %q\n", r.Column)
			fmt.Fprintf(&b, "    older_than    = %q\n", units.FormatDuration(r.OlderThan))
			fmt.Fprintf(&b, "    data_skipping = %t\n", !r.NoDataSkipping)
			if r.TimeZone != "" {
				fmt.Fprintf(&b, "    time_zone     = %q\n", r.TimeZone)
			}
			if r.EpochUnit != "" {
				fmt.Fprintf(&b, "    epoch_unit    = %q\n", r.EpochUnit)
			}
			fmt.Fprintf(&b, "  }\n")
		}
		fmt.Fprintf(&b, "\n  checkpoint {\n")
		fmt.Fprintf(&b, "    enabled    = %t\n", p.Checkpoint.Enabled)
		fmt.Fprintf(&b, "    catch_up   = %t\n", p.Checkpoint.CatchUp)
		if p.Checkpoint.MaxBehind == 0 {
			unset(&b, "    max_behind = ", "default (the table's delta.checkpointInterval)")
		} else {
			fmt.Fprintf(&b, "    max_behind = %d\n", p.Checkpoint.MaxBehind)
		}
		fmt.Fprintf(&b, "  }\n")
		fmt.Fprintf(&b, "\n  fleet {\n")
		fmt.Fprintf(&b, "    quota = %s\n", fmtFloat(p.Fleet.Quota))
		if p.Fleet.Group != "" {
			fmt.Fprintf(&b, "    group = %q\n", p.Fleet.Group)
		}
		fmt.Fprintf(&b, "  }\n")
		fmt.Fprintf(&b, "\n  log_cleanup {\n")
		fmt.Fprintf(&b, "    enabled     = %t\n", p.LogCleanup.Enabled)
		if p.LogCleanup.Concurrency > 0 {
			fmt.Fprintf(&b, "    concurrency = %d\n", p.LogCleanup.Concurrency)
		}
		fmt.Fprintf(&b, "  }\n")
		if v := p.Vacuum; v != nil {
			fmt.Fprintf(&b, "\n  vacuum {\n")
			fmt.Fprintf(&b, "    mode          = %q\n", v.Mode)
			fmt.Fprintf(&b, "    interval      = %q\n", units.FormatDuration(v.Interval))
			fmt.Fprintf(&b, "    full_interval = %q\n", units.FormatDuration(v.FullInterval))
			if v.Retention > 0 {
				fmt.Fprintf(&b, "    retention     = %q\n", units.FormatDuration(v.Retention))
				fmt.Fprintf(&b, "    force_retention = %t\n", v.ForceRetention)
			}
			if v.Concurrency > 0 {
				fmt.Fprintf(&b, "    concurrency   = %d\n", v.Concurrency)
			}
			fmt.Fprintf(&b, "  }\n")
		}
		if sb := p.StatsBackfill; sb != nil {
			fmt.Fprintf(&b, "\n  stats_backfill {\n    max_files = %d\n  }\n", sb.MaxFiles)
		}
		if e := p.Executor; e != nil {
			fmt.Fprintf(&b, "\n  executor {\n")
			fmt.Fprintf(&b, "    kind                    = %q\n", e.Kind)
			fmt.Fprintf(&b, "    min_backlog_bytes       = %s\n", hclSize(e.MinBacklogBytes))
			fmt.Fprintf(&b, "    parallelism             = %d\n", e.Parallelism)
			fmt.Fprintf(&b, "    backoff_limit_per_index = %d\n", e.BackoffLimitPerIndex)
			fmt.Fprintf(&b, "    max_units               = %d\n", e.MaxUnits)
			fmt.Fprintf(&b, "  }\n")
		}
		fmt.Fprintf(&b, "}\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// hclSize is a size attribute's value: FormatBytes quoted, or the byte
// count in bytes ("1000001 B") where FormatBytes would not read back to n.
func hclSize(n int64) string {
	if units.Exact(n) {
		return strconv.Quote(units.FormatBytes(n))
	}
	return strconv.Quote(strconv.FormatInt(n, 10) + " B")
}

// unsetSize writes a size attribute (prefix is its indented "name = "), or
// for 0, whose default is 0 too, what 0 means as a comment: leaving the
// attribute out reads back the same.
func unsetSize(b *strings.Builder, prefix string, n int64, means string) {
	if n == 0 {
		unset(b, prefix, means)
		return
	}
	fmt.Fprintf(b, "%s%s\n", prefix, hclSize(n))
}

// unset writes an attribute left at its zero default as a comment saying
// what it means ("# max_bytes_per_run    = unlimited"), aligned with the
// attributes around it.
func unset(b *strings.Builder, prefix, means string) {
	indent := prefix[:len(prefix)-len(strings.TrimLeft(prefix, " "))]
	name := strings.TrimLeft(prefix, " ")
	// "# " takes two columns of the name's padding where it has them.
	if p := strings.Index(name, "  ="); p >= 0 {
		name = name[:p] + name[p+2:]
	}
	fmt.Fprintf(b, "%s# %s%s\n", indent, name, means)
}

// offIf is the comment of a trigger threshold that is off (0).
func offIf(off bool) string {
	if off {
		return " # off"
	}
	return ""
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func fmtStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
