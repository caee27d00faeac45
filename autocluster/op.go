package autocluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/compactord/compactord/clusteradvise"
	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/planner"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/tableop"
	"github.com/hashicorp/go-hclog"
)

// Name is the operation's name in /status.
const Name = "autocluster"

// The operation's counts (tableop.Result.Counts).
const (
	// CountKeyChanges is 1 when the run set a new key.
	CountKeyChanges = "clustering_key_changes"
	// CountRefused is 1 when the key chosen could not be set.
	CountRefused = "clustering_key_refused"
	// CountPredicates is the predicates gathered from the log this run.
	CountPredicates = "clustering_predicates_gathered"
)

// Hold codes of the run's result: why the key stayed, or what changed.
const (
	HoldKept    = "clustering_key_kept"
	HoldChanged = "clustering_key_changed"
	HoldRefused = "clustering_key_refused"
)

// Factory is the operation's factory: a policy without `columns = "auto"`
// gets none.
func Factory(commitOpts commit.Options) tableop.Factory[policies.Policy, *delta.Table] {
	return tableop.Factory[policies.Policy, *delta.Table]{Name: Name, New: func(p policies.Policy, env tableop.Env) (tableop.Op[*delta.Table], bool, error) {
		if !p.Clustering.Auto {
			return nil, false, nil
		}
		return &Op{Options: clusteradvise.DefaultOptions(), TargetFileSize: p.TargetFileSize, Now: env.Now, Logger: env.LoggerOr().Named(Name),
			Commit: commitOpts.Inherit(env.Now, env.LoggerOr(), env.EngineInfo)}, true, nil
	}}
}

// Op is one run's CLUSTER BY AUTO pass over a table.
type Op struct {
	Options clusteradvise.Options
	// TargetFileSize is the policy's (0: the table's, else the planner's
	// default).
	TargetFileSize int64
	// SampleRows bounds the sample (0: clusteradvise.DefaultSampleRows).
	SampleRows int
	// Every is the least time between two advices (0: DefaultEvery): the
	// evidence is still gathered on every run, but the sample, which reads
	// data files, is not taken more often.
	Every  time.Duration
	Now    func() time.Time
	Logger hclog.Logger
	Commit commit.Options
}

// DefaultEvery is Op.Every's default.
const DefaultEvery = 6 * time.Hour

var _ tableop.Op[*delta.Table] = (*Op)(nil)

// Name implements tableop.Op.
func (*Op) Name() string { return Name }

func (o *Op) now() time.Time {
	if o.Now != nil {
		return o.Now().UTC()
	}
	return time.Now().UTC()
}

func (o *Op) log() hclog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return hclog.NewNullLogger()
}

// HoldFailed is the hold of a run whose advice failed.
const HoldFailed = "clustering_advice_failed"

// Run implements tableop.Op. The advice is advisory: a failure is logged
// and shown as a hold, and does not fail the run (the compaction after it
// goes ahead); only a cancelled context is returned.
func (o *Op) Run(ctx context.Context, t *delta.Table) (tableop.Result, error) {
	res, err := o.run(ctx, t)
	if err != nil && ctx.Err() == nil {
		o.log().Warn("clustering advice failed; the next run tries again", "table", t.Name(), "error", err)
		res.Held = []tableop.Hold{{Code: HoldFailed, Reason: err.Error()}}
		return res, nil
	}
	return res, err
}

func (o *Op) run(ctx context.Context, t *delta.Table) (tableop.Result, error) {
	now := o.now()
	res := tableop.Result{Counts: map[string]int64{}}
	snap, err := delta.LoadSnapshot(ctx, t, -1)
	if err != nil {
		return res, err
	}
	res.ReadVersion = snap.Version
	cs, err := t.Conditional()
	if err != nil {
		return res, fmt.Errorf("table %s: %w", t.Name(), err)
	}
	var gathered clusteradvise.GatherStats
	rec, err := clusteradvise.Update(ctx, cs, func(rec *clusteradvise.Record) error {
		var err error
		gathered, err = clusteradvise.GatherLog(ctx, t, rec, snap.Version)
		rec.DecayTo(now)
		return err
	})
	if err != nil {
		return res, fmt.Errorf("table %s: clustering evidence: %w", t.Name(), err)
	}
	res.Counts[CountPredicates] = int64(gathered.Predicates)
	every := o.Every
	if every <= 0 {
		every = DefaultEvery
	}
	if !rec.Checked.IsZero() && now.Sub(rec.Checked) < every && now.After(rec.Checked) {
		res.Held = []tableop.Hold{{Code: HoldKept, Reason: fmt.Sprintf("advised %s ago (every %s): %s", now.Sub(rec.Checked).Round(time.Second), every, rec.Verdict)}}
		return res, nil
	}
	target, err := planner.TargetFileSize(o.TargetFileSize, snap.Properties())
	if err != nil {
		return res, fmt.Errorf("table %s: %w", t.Name(), err)
	}
	adv, err := clusteradvise.AdviseTable(ctx, t, snap, rec, target, o.SampleRows, o.Options)
	if err != nil {
		return res, err
	}
	cur, err := clusteradvise.CurrentKey(snap)
	if err != nil {
		return res, err
	}
	v := clusteradvise.Decide(adv, rec.StateFor(cur), now, o.Options)
	dec := clusteradvise.Decision{At: now, Old: cur, New: v.Key, Reason: v.Reason,
		EvidenceWeight: adv.EvidenceWeight, EvidenceRate: adv.EvidenceRate, OldBytesRead: adv.Baseline.BytesRead}
	if adv.CurrentKey != nil {
		dec.OldBytesRead = adv.CurrentKey.BytesRead
	}
	if v.Best != nil {
		dec.NewBytesRead, dec.Score = v.Best.BytesRead, v.Best.Score
	}
	hold := tableop.Hold{Code: HoldKept, Reason: v.Reason}
	if v.Change {
		ver, err := Apply(ctx, t, snap, v.Key, o.Commit)
		switch {
		case errors.Is(err, ErrRefused):
			dec.Reason = err.Error()
			hold = tableop.Hold{Code: HoldRefused, Reason: err.Error()}
			res.Counts[CountRefused] = 1
			o.log().Warn("clustering key not set", "table", t.Name(), "old", strings.Join(cur, ","), "new", strings.Join(v.Key, ","), "reason", err.Error())
		case err != nil:
			return res, err
		default:
			dec.Applied, dec.Version = true, ver
			res.Committed, res.Version = true, ver
			res.Counts[CountKeyChanges] = 1
			hold = tableop.Hold{Code: HoldChanged, Reason: fmt.Sprintf("key %s -> %s at version %d: %s", keyText(cur), keyText(v.Key), ver, v.Reason)}
			o.log().Info("clustering key changed", "table", t.Name(), "version", ver, "old", keyText(cur), "new", keyText(v.Key),
				"evidence_weight", round(adv.EvidenceWeight), "evidence_per_day", round(adv.EvidenceRate),
				"old_bytes_read", int64(dec.OldBytesRead), "new_bytes_read", int64(dec.NewBytesRead), "reason", v.Reason)
		}
	}
	_, err = clusteradvise.Update(ctx, cs, func(r *clusteradvise.Record) error {
		r.Checked, r.Verdict = now, hold.Reason
		r.Pending, r.PendingSince = v.Pending, v.PendingSince
		if dec.Applied {
			r.Keys, r.KeysSince = v.Key, now
			r.Pending, r.PendingSince = nil, time.Time{}
		}
		if dec.Applied || v.Change && !sameRefusal(r.LastDecision(), dec) {
			r.AddDecision(dec)
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("table %s: record clustering decision: %w", t.Name(), err)
	}
	res.Held = []tableop.Hold{hold}
	return res, nil
}

func sameRefusal(last *clusteradvise.Decision, d clusteradvise.Decision) bool {
	return last != nil && !last.Applied && slices.Equal(last.New, d.New) && last.Reason == d.Reason
}

func keyText(k []string) string {
	if len(k) == 0 {
		return "(none)"
	}
	return strings.Join(k, ", ")
}

func round(f float64) float64 { return math.Round(f*100) / 100 }
