package logcleanup

import (
	"context"
	"fmt"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/units"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/tableop"
)

// Name is the log cleanup operation's name in reports and metrics.
const Name = "log_cleanup"

// Counts (tableop.Result.Counts) a log cleanup run reports.
const (
	// CountFilesDeleted and CountBytesDeleted are the log files (commits,
	// checkpoints, checksums, compaction files, sidecars) deleted.
	CountFilesDeleted = "log_files_deleted"
	CountBytesDeleted = "log_bytes_deleted"
)

// Factory returns the log cleanup operation's factory: a policy whose
// log_cleanup block is enabled (the default) gets Cleanup after the
// checkpoint pass; the table's delta.enableExpiredLogCleanup=false still
// wins.
func Factory() tableop.Factory[policies.Policy, *delta.Table] {
	return tableop.Factory[policies.Policy, *delta.Table]{Name: Name, New: func(p policies.Policy, env tableop.Env) (tableop.Op[*delta.Table], bool, error) {
		if !p.LogCleanup.Enabled {
			return nil, false, nil
		}
		return &Op{Options: Options{Now: env.Now, Concurrency: p.LogCleanup.Concurrency, Logger: env.LoggerOr().Named(Name)}}, true, nil
	}}
}

// Op is the daemon's log cleanup of one table for one run.
type Op struct {
	Options Options
}

var _ tableop.Op[*delta.Table] = (*Op)(nil)

// Name implements tableop.Op.
func (*Op) Name() string { return Name }

// Run implements tableop.Op.
func (o *Op) Run(ctx context.Context, t *delta.Table) (tableop.Result, error) {
	res, err := Cleanup(ctx, t, o.Options)
	var out tableop.Result
	if res != nil {
		out.ReadVersion = res.Latest
		if n := len(res.Deleted); n > 0 {
			out.Counts = map[string]int64{CountFilesDeleted: int64(n), CountBytesDeleted: res.BytesDeleted}
			out.Done = []string{fmt.Sprintf("%s deleted (%s), the log kept from the checkpoint of version %d", plural(n, "expired log file"), units.FormatBytes(res.BytesDeleted), res.Boundary)}
		}
	}
	return out, err
}

// plural says "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
