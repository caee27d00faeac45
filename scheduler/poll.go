package scheduler

import (
	"errors"
	"time"

	"github.com/compactord/compactord/failure"
)

// poll reads new log entries and returns the trigger that fires, if any.
func (t *table[P]) poll() string {
	t.mu.Lock()
	lastSeen := t.lastSeen
	t.mu.Unlock()
	res, err := t.s.cfg.Poll(t.runCtx, t.policy, lastSeen)
	now := t.s.cfg.Clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.counters.Polls++
	t.firstPollOver()
	if err != nil {
		t.counters.PollErrors++
		t.pollError = err.Error()
		switch {
		case errors.Is(err, ErrUnavailable):
			t.wait(err, now)
		case failure.Of(err) == failure.Halt:
			t.log().Warn("poll failed", "error", err)
			t.halt(err)
		default:
			t.log().Warn("poll failed", "error", err)
		}
		return ""
	}
	t.pollError = ""
	if t.waiting != nil {
		t.log().Info("the table can be read now; it runs as its triggers say", "waited", now.Sub(t.waiting.Since).Round(time.Second), "attempts", t.waiting.Attempts)
		t.waiting = nil
		t.nextPoll = now.Add(t.s.cfg.PollInterval)
		if t.state == StateWaiting {
			t.state = StateIdle
		}
	}
	first := t.backlog == nil
	changed := res.Changed || t.unevaluated
	t.unevaluated = false
	if res.Changed {
		t.lastSeen = res.Version
		if res.Backlog != nil {
			b := *res.Backlog
			t.backlog = &b
		}
	}
	if res.Backlog != nil && res.Backlog.QuarantinedFiles < len(t.quarantine) && t.s.cfg.Quarantine != nil {
		// Some quarantined file is no longer live: the next save drops it.
		t.quarantineDirty = true
	}
	if t.backlog == nil || !t.spec.Enabled || !t.retryAt.IsZero() {
		return "" // nothing known yet, disabled, or a retry is already pending
	}
	last := t.lastSuccess
	if last.IsZero() {
		last = t.s.started
	}
	reason := Evaluate(t.spec.Triggers, *t.backlog, last, now)
	if reason == "" && first {
		// The first thing a newcomer watches for: why a table with small
		// files does not run yet, and when it will.
		t.log().Info("no trigger crossed yet; the table runs when one is", untriggered(t.spec.Name, t.spec.Triggers, *t.backlog, last)...)
	}
	if reason == "max_time_since_last_run" || changed {
		return reason
	}
	// The log has not moved since the last poll: thresholds that held then
	// were acted on then; firing again would only repeat a no-op run.
	return ""
}

// untriggered returns, as log key/value pairs, how far the backlog is from
// each enabled trigger and when the time trigger fires at the latest.
func untriggered(name string, t Triggers, b Backlog, last time.Time) []any {
	kv := []any{"mergeable_files", b.MergeableFiles}
	if t.SmallFiles > 0 {
		kv = append(kv, "small_files_trigger", t.SmallFiles)
	}
	if t.DeletedRowsRatio > 0 {
		kv = append(kv, "deleted_rows_ratio", b.DeletedRowsRatio, "deleted_rows_ratio_trigger", t.DeletedRowsRatio)
	}
	if t.UnclusteredBytes > 0 {
		kv = append(kv, "unclustered_bytes", b.UnclusteredBytes, "unclustered_bytes_trigger", t.UnclusteredBytes)
	}
	if t.MaxTimeSinceLastRun > 0 && b.MergeableFiles >= 2 {
		kv = append(kv, "runs_by", last.Add(t.MaxTimeSinceLastRun).UTC().Format(time.RFC3339))
	}
	return append(kv, "run_now", "POST /tables/"+name+"/run")
}
