package statsbackfill

import (
	"context"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/tableop"
)

// Name is the backfill operation's name in policies, reports and metrics.
const Name = "stats_backfill"

// CountFilesBackfilled is the count (tableop.Result.Counts) of files that
// got statistics.
const CountFilesBackfilled = "files_backfilled"

// Factory returns the backfill's factory: a policy with a stats_backfill
// block gets one backfill of at most max_files files per run, committed
// with co.
func Factory(co commit.Options) tableop.Factory[policies.Policy, *delta.Table] {
	return tableop.Factory[policies.Policy, *delta.Table]{Name: Name, New: func(p policies.Policy, env tableop.Env) (tableop.Op[*delta.Table], bool, error) {
		b := p.StatsBackfill
		if b == nil {
			return nil, false, nil
		}
		return &Op{Options: Options{MaxFiles: b.MaxFiles, Exclude: env.Exclude, EngineInfo: env.EngineInfo, Commit: co,
			Now: env.Now, Logger: env.LoggerOr().Named(Name)}}, true, nil
	}}
}

// Op is one backfill with fixed options.
type Op struct {
	Options Options
}

var _ tableop.Op[*delta.Table] = (*Op)(nil)

// Name implements tableop.Op.
func (*Op) Name() string { return Name }

// Run implements tableop.Op.
func (o *Op) Run(ctx context.Context, t *delta.Table) (tableop.Result, error) {
	res, err := Run(ctx, t, o.Options)
	var out tableop.Result
	if res != nil {
		out.ReadVersion = res.ReadVersion
		if res.CommittedVersion >= 0 {
			out.Committed, out.Version = true, res.CommittedVersion
			out.Counts = map[string]int64{CountFilesBackfilled: int64(res.Backfilled)}
		}
	}
	return out, err
}
