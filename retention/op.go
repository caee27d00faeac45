package retention

import (
	"context"
	"fmt"
	"time"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/attemptsweep"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/tableop"
	"github.com/compactord/compactord/writer"
)

// Name is the retention operation's name in policies, reports and metrics.
const Name = "retention"

// CountRowsExpired is the count (tableop.Result.Counts) of rows a retention
// delete removed.
const CountRowsExpired = "rows_expired"

// Factory returns the retention operation's factory: a policy with a
// retention block gets one retention delete per run, committed with co and
// rewritten (copy-on-write) with wo under the policy's writer settings; its
// start sweeps the dead attempts of killed runs with the staleness window
// attemptStaleAfter (Options.AttemptStaleAfter; 0: the default).
func Factory(co commit.Options, wo writer.Options, attemptStaleAfter time.Duration) tableop.Factory[policies.Policy, *delta.Table] {
	return tableop.Factory[policies.Policy, *delta.Table]{Name: Name, New: func(p policies.Policy, env tableop.Env) (tableop.Op[*delta.Table], bool, error) {
		r := p.Retention
		if r == nil {
			return nil, false, nil
		}
		var loc *time.Location
		if r.TimeZone != "" {
			l, err := time.LoadLocation(r.TimeZone)
			if err != nil {
				return nil, false, fmt.Errorf("retention time_zone %q: %w", r.TimeZone, err)
			}
			loc = l
		}
		return &Op{Options: Options{
			Column:              r.Column,
			EpochUnit:           r.EpochUnit,
			OlderThan:           r.OlderThan,
			TimeZone:            loc,
			Now:                 env.NowOr(),
			DisableDataSkipping: r.NoDataSkipping,
			Commit:              co,
			Writer:              p.WriterOptions(wo),
			Logger:              env.LoggerOr().Named(Name),
			Progress:            env.Progress,
			AttemptStaleAfter:   attemptStaleAfter,
		}}, true, nil
	}}
}

// Op is one retention delete with fixed options.
type Op struct {
	Options Options
}

var _ tableop.Op[*delta.Table] = (*Op)(nil)

// Name implements tableop.Op.
func (*Op) Name() string { return Name }

// Run implements tableop.Op: one Expire. Its conflicts are reported with a
// "retention_" prefix, apart from compaction's.
func (o *Op) Run(ctx context.Context, t *delta.Table) (tableop.Result, error) {
	res, err := Expire(ctx, t, o.Options)
	var out tableop.Result
	if res != nil {
		out.Counts = attemptsweep.Result{Records: res.SweptAttempts, Objects: res.SweptObjects}.Counts()
		for k, n := range res.Conflicts {
			if out.Conflicts == nil {
				out.Conflicts = map[string]int{}
			}
			out.Conflicts["retention_"+k] += n
		}
		if res.CommittedVersion >= 0 {
			out.Committed = true
			out.Version = res.CommittedVersion
			out.Counts[CountRowsExpired] = res.RowsDeleted
		}
	}
	return out, err
}
