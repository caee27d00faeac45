package clusteradvise

import (
	"fmt"
	"time"

	"github.com/compactord/compactord/internal/units"
)

// State is what Decide remembers between decisions: the key in force,
// since when, and the replacement waiting for confirmation.
type State struct {
	Current []string
	// Since is when Current was set by auto clustering (zero: long ago, or
	// by someone else).
	Since time.Time
	// Pending is a key that passed every test but the confirmation, and
	// PendingSince when it first did.
	Pending      []string
	PendingSince time.Time
}

// Verdict is Decide's answer.
type Verdict struct {
	// Change reports that Key should replace the current key.
	Change bool
	// Key is the key to set when Change, else the key to keep.
	Key []string
	// Reason says why, in one line.
	Reason string
	// Best is the estimate behind the answer (nil without candidates).
	Best *Estimate
	// Pending and PendingSince are the State's next values.
	Pending      []string
	PendingSince time.Time
}

// Decide turns an advice into a verdict: keep the current key unless the
// best candidate (1) stands on evidence, on a table of at least
// MinTableBytes, (2) has a positive score, (3) reads at most 1-MinGain of
// the current layout's bytes, and, when the table has a key, (4) reads at
// least Margin fewer bytes than the current key under the same estimator,
// (5) the current key has been kept for the horizon it was amortised over
// and (6) the replacement has passed every test for Confirm (the same key
// each time: a workload moving from a to b passes through a mix that
// favours {a, b} for a while, and re-clustering twice costs twice). It
// never removes a key.
func Decide(adv *Advice, st State, now time.Time, opts Options) Verdict {
	opts = opts.withDefaults()
	current, since := st.Current, st.Since
	keep := Verdict{Key: current}
	if adv.Replayed == 0 || adv.EvidenceWeight <= 0 {
		keep.Reason = "no evidence: no predicate was recorded or readable"
		return keep
	}
	if adv.TableBytes < opts.MinTableBytes {
		keep.Reason = fmt.Sprintf("table of %s under the %s threshold", units.FormatBytes(adv.TableBytes), units.FormatBytes(opts.MinTableBytes))
		return keep
	}
	if len(adv.Ranking) == 0 {
		keep.Reason = "no candidate key: the evidence filters on no column a key can use"
		return keep
	}
	best := adv.Ranking[0]
	keep.Best = &best
	switch {
	case sameKey(best.Key, current):
		keep.Reason = fmt.Sprintf("the current key %s is the best", keyString(current))
		return keep
	case best.Score <= 0:
		keep.Reason = fmt.Sprintf("no key pays for its re-clustering: best %s saves %s a day against %s to rewrite over %s",
			keyString(best.Key), units.FormatBytes(int64(best.SavedPerDay)), units.FormatBytes(best.ReclusterBytes), opts.Horizon)
		return keep
	case best.Gain < opts.MinGain:
		keep.Reason = fmt.Sprintf("best key %s cuts the bytes read by %.0f%%, under the %.0f%% asked", keyString(best.Key), 100*best.Gain, 100*opts.MinGain)
		return keep
	}
	if len(current) > 0 {
		if adv.CurrentKey != nil && best.BytesRead > (1-opts.Margin)*adv.CurrentKey.BytesRead {
			keep.Reason = fmt.Sprintf("best key %s reads %.0f%% fewer bytes than the current %s, within the %.0f%% margin",
				keyString(best.Key), 100*(1-best.BytesRead/max(1, adv.CurrentKey.BytesRead)), keyString(current), 100*opts.Margin)
			return keep
		}
		if !since.IsZero() && now.Sub(since) < opts.Horizon {
			keep.Reason = fmt.Sprintf("best key %s would replace %s, but it was set %s ago, within the %s horizon",
				keyString(best.Key), keyString(current), now.Sub(since).Round(time.Minute), opts.Horizon)
			return keep
		}
	}
	if len(current) > 0 {
		if !sameKey(st.Pending, best.Key) || st.PendingSince.IsZero() {
			keep.Pending, keep.PendingSince = best.Key, now
			keep.Reason = fmt.Sprintf("best key %s would replace %s; confirmed if it still does in %s", keyString(best.Key), keyString(current), opts.Confirm)
			return keep
		}
		if waited := now.Sub(st.PendingSince); waited < opts.Confirm {
			keep.Pending, keep.PendingSince = st.Pending, st.PendingSince
			keep.Reason = fmt.Sprintf("best key %s would replace %s since %s ago; confirmed after %s", keyString(best.Key), keyString(current), waited.Round(time.Minute), opts.Confirm)
			return keep
		}
	}
	return Verdict{Change: true, Key: best.Key, Best: &best,
		Reason: fmt.Sprintf("key %s cuts the bytes read by %.0f%% (score %s a day)", keyString(best.Key), 100*best.Gain, units.FormatBytes(int64(best.Score)))}
}
