package policies

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/compactord/compactord/internal/units"
)

// WriteHCL writes the effective policy set as HCL that LoadDir reads back to
// the same values: every attribute explicit, defaults filled in.
func WriteHCL(w io.Writer, s *Set) error {
	var b strings.Builder
	d := s.Daemon
	fmt.Fprintf(&b, "daemon {\n")
	fmt.Fprintf(&b, "  poll             = %q\n", units.FormatDuration(d.Poll))
	fmt.Fprintf(&b, "  workers          = %d\n", d.Workers)
	fmt.Fprintf(&b, "  http             = %q\n", d.HTTP)
	fmt.Fprintf(&b, "  shutdown_timeout = %q\n", units.FormatDuration(d.ShutdownTimeout))
	fmt.Fprintf(&b, "  backoff_base     = %q\n", units.FormatDuration(d.BackoffBase))
	fmt.Fprintf(&b, "  backoff_max      = %q\n", units.FormatDuration(d.BackoffMax))
	fmt.Fprintf(&b, "  replica          = %q\n", d.Replica)
	fmt.Fprintf(&b, "  lease_ttl        = %q\n", units.FormatDuration(d.LeaseTTL))
	fmt.Fprintf(&b, "}\n")
	for _, p := range s.Tables {
		fmt.Fprintf(&b, "\n# %s\ntable %q {\n", p.Source, p.Name)
		fmt.Fprintf(&b, "  url                    = %q\n", p.URL)
		fmt.Fprintf(&b, "  schedule               = %q\n", p.Schedule)
		fmt.Fprintf(&b, "  strategy               = %q\n", p.Strategy)
		fmt.Fprintf(&b, "  enabled                = %t\n", p.Enabled)
		fmt.Fprintf(&b, "  concurrency            = %d\n", p.Concurrency)
		fmt.Fprintf(&b, "  compression            = %q\n", p.Compression)
		fmt.Fprintf(&b, "  target_file_size       = %q\n", units.FormatBytes(p.TargetFileSize))
		fmt.Fprintf(&b, "  min_file_size          = %q\n", units.FormatBytes(p.MinFileSize))
		fmt.Fprintf(&b, "  max_deleted_rows_ratio = %s\n", fmtFloat(p.MaxDeletedRowsRatio))
		fmt.Fprintf(&b, "  settle_window          = %q\n", units.FormatDuration(p.SettleWindow))
		fmt.Fprintf(&b, "  max_bytes_per_run      = %q\n", units.FormatBytes(p.MaxBytesPerRun))
		fmt.Fprintf(&b, "  max_jobs_per_run       = %d\n", p.MaxJobsPerRun)
		fmt.Fprintf(&b, "  job_order              = %q\n", p.JobOrder)
		c := p.Clustering
		fmt.Fprintf(&b, "\n  clustering {\n")
		fmt.Fprintf(&b, "    columns                 = %s\n", fmtStrings(c.Columns))
		fmt.Fprintf(&b, "    lightweight_column      = %q\n", c.LightweightColumn)
		fmt.Fprintf(&b, "    max_unclustered_bytes   = %q\n", units.FormatBytes(c.MaxUnclusteredBytes))
		fmt.Fprintf(&b, "    max_relative_file_range = %s\n", fmtFloat(c.MaxRelativeFileRange))
		fmt.Fprintf(&b, "    min_cube_size           = %q\n", units.FormatBytes(c.MinCubeSize))
		fmt.Fprintf(&b, "    cube_merge_min_cubes    = %d\n", c.CubeMergeMinCubes)
		fmt.Fprintf(&b, "  }\n")
		t := p.Triggers
		fmt.Fprintf(&b, "\n  triggers {\n")
		fmt.Fprintf(&b, "    small_files             = %d\n", t.SmallFiles)
		fmt.Fprintf(&b, "    deleted_rows_ratio      = %s\n", fmtFloat(t.DeletedRowsRatio))
		fmt.Fprintf(&b, "    unclustered_bytes       = %q\n", units.FormatBytes(t.UnclusteredBytes))
		fmt.Fprintf(&b, "    max_time_since_last_run = %q\n", units.FormatDuration(t.MaxTimeSinceLastRun))
		fmt.Fprintf(&b, "  }\n")
		if r := p.Retention; r != nil {
			fmt.Fprintf(&b, "\n  retention {\n")
			fmt.Fprintf(&b, "    column        = %q\n", r.Column)
			fmt.Fprintf(&b, "    older_than    = %q\n", units.FormatDuration(r.OlderThan))
			fmt.Fprintf(&b, "    data_skipping = %t\n", !r.NoDataSkipping)
			if r.TimeZone != "" {
				fmt.Fprintf(&b, "    time_zone     = %q\n", r.TimeZone)
			}
			fmt.Fprintf(&b, "  }\n")
		}
		fmt.Fprintf(&b, "\n  checkpoint {\n")
		fmt.Fprintf(&b, "    enabled    = %t\n", p.Checkpoint.Enabled)
		fmt.Fprintf(&b, "    catch_up   = %t\n", p.Checkpoint.CatchUp)
		fmt.Fprintf(&b, "    max_behind = %d\n", p.Checkpoint.MaxBehind)
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
		fmt.Fprintf(&b, "}\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func fmtStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
