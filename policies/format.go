package policies

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// FormatSize renders bytes with the largest binary unit that divides them.
func FormatSize(n int64) string {
	for _, u := range []struct {
		s string
		m int64
	}{{"TiB", 1 << 40}, {"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB}} {
		if n != 0 && n%u.m == 0 {
			return strconv.FormatInt(n/u.m, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// FormatDuration renders a duration the way ParseDuration reads it back.
func FormatDuration(d time.Duration) string {
	if d != 0 && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// WriteHCL writes the effective policy set as HCL that LoadDir reads back to
// the same values: every attribute explicit, defaults filled in.
func WriteHCL(w io.Writer, s *Set) error {
	var b strings.Builder
	d := s.Daemon
	fmt.Fprintf(&b, "daemon {\n")
	fmt.Fprintf(&b, "  poll             = %q\n", FormatDuration(d.Poll))
	fmt.Fprintf(&b, "  workers          = %d\n", d.Workers)
	fmt.Fprintf(&b, "  http             = %q\n", d.HTTP)
	fmt.Fprintf(&b, "  shutdown_timeout = %q\n", FormatDuration(d.ShutdownTimeout))
	fmt.Fprintf(&b, "  backoff_base     = %q\n", FormatDuration(d.BackoffBase))
	fmt.Fprintf(&b, "  backoff_max      = %q\n", FormatDuration(d.BackoffMax))
	fmt.Fprintf(&b, "  replica          = %q\n", d.Replica)
	fmt.Fprintf(&b, "  lease_ttl        = %q\n", FormatDuration(d.LeaseTTL))
	fmt.Fprintf(&b, "}\n")
	for _, p := range s.Tables {
		fmt.Fprintf(&b, "\n# %s\ntable %q {\n", p.Source, p.Name)
		fmt.Fprintf(&b, "  url                    = %q\n", p.URL)
		fmt.Fprintf(&b, "  schedule               = %q\n", p.Schedule)
		fmt.Fprintf(&b, "  strategy               = %q\n", p.Strategy)
		fmt.Fprintf(&b, "  enabled                = %t\n", p.Enabled)
		fmt.Fprintf(&b, "  concurrency            = %d\n", p.Concurrency)
		fmt.Fprintf(&b, "  compression            = %q\n", p.Compression)
		fmt.Fprintf(&b, "  target_file_size       = %q\n", FormatSize(p.TargetFileSize))
		fmt.Fprintf(&b, "  min_file_size          = %q\n", FormatSize(p.MinFileSize))
		fmt.Fprintf(&b, "  max_deleted_rows_ratio = %s\n", fmtFloat(p.MaxDeletedRowsRatio))
		fmt.Fprintf(&b, "  settle_window          = %q\n", FormatDuration(p.SettleWindow))
		fmt.Fprintf(&b, "  max_bytes_per_run      = %q\n", FormatSize(p.MaxBytesPerRun))
		fmt.Fprintf(&b, "  max_jobs_per_run       = %d\n", p.MaxJobsPerRun)
		fmt.Fprintf(&b, "  job_order              = %q\n", p.JobOrder)
		c := p.Clustering
		fmt.Fprintf(&b, "\n  clustering {\n")
		fmt.Fprintf(&b, "    columns                 = %s\n", fmtStrings(c.Columns))
		fmt.Fprintf(&b, "    lightweight_column      = %q\n", c.LightweightColumn)
		fmt.Fprintf(&b, "    max_unclustered_bytes   = %q\n", FormatSize(c.MaxUnclusteredBytes))
		fmt.Fprintf(&b, "    max_relative_file_range = %s\n", fmtFloat(c.MaxRelativeFileRange))
		fmt.Fprintf(&b, "    min_cube_size           = %q\n", FormatSize(c.MinCubeSize))
		fmt.Fprintf(&b, "    cube_merge_min_cubes    = %d\n", c.CubeMergeMinCubes)
		fmt.Fprintf(&b, "  }\n")
		t := p.Triggers
		fmt.Fprintf(&b, "\n  triggers {\n")
		fmt.Fprintf(&b, "    small_files             = %d\n", t.SmallFiles)
		fmt.Fprintf(&b, "    deleted_rows_ratio      = %s\n", fmtFloat(t.DeletedRowsRatio))
		fmt.Fprintf(&b, "    unclustered_bytes       = %q\n", FormatSize(t.UnclusteredBytes))
		fmt.Fprintf(&b, "    max_time_since_last_run = %q\n", FormatDuration(t.MaxTimeSinceLastRun))
		fmt.Fprintf(&b, "  }\n")
		if r := p.Retention; r != nil {
			fmt.Fprintf(&b, "\n  retention {\n")
			fmt.Fprintf(&b, "    column        = %q\n", r.Column)
			fmt.Fprintf(&b, "    older_than    = %q\n", FormatDuration(r.OlderThan))
			fmt.Fprintf(&b, "    data_skipping = %t\n", !r.NoDataSkipping)
			if r.TimeZone != "" {
				fmt.Fprintf(&b, "    time_zone     = %q\n", r.TimeZone)
			}
			fmt.Fprintf(&b, "  }\n")
		}
		if v := p.Vacuum; v != nil {
			fmt.Fprintf(&b, "\n  vacuum {\n")
			fmt.Fprintf(&b, "    mode          = %q\n", v.Mode)
			fmt.Fprintf(&b, "    interval      = %q\n", FormatDuration(v.Interval))
			fmt.Fprintf(&b, "    full_interval = %q\n", FormatDuration(v.FullInterval))
			if v.Retention > 0 {
				fmt.Fprintf(&b, "    retention     = %q\n", FormatDuration(v.Retention))
				fmt.Fprintf(&b, "    force_retention = %t\n", v.ForceRetention)
			}
			if v.Concurrency > 0 {
				fmt.Fprintf(&b, "    concurrency   = %d\n", v.Concurrency)
			}
			fmt.Fprintf(&b, "  }\n")
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
