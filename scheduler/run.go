package scheduler

// A table's run: waiting for a worker in the fleet queue, the operations
// in order, and what the run's end does to the table's state.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/compactord/compactord/failure"
)

// attempt runs the table once if it may run now.
func (t *table[P]) attempt(reason string, manual bool) {
	t.mu.Lock()
	if t.halted || !t.spec.Enabled {
		t.mu.Unlock()
		return
	}
	now := t.s.cfg.Clock.Now()
	if !manual && reason != ReasonRetry && !t.retryAt.IsZero() && now.Before(t.retryAt) {
		t.counters.Deferred++
		t.mu.Unlock()
		return // backing off: the pending retry covers this trigger
	}
	t.state = StateQueued
	t.mu.Unlock()
	if t.readStoredHalt() {
		return // halted elsewhere (another replica) since this table started
	}
	t.loadQuarantine()
	t.saveQuarantine(false)

	w := t.waiter(reason)
	t.s.fleet.enqueue(w)
	select {
	case <-w.grant:
	case <-t.quit:
		t.s.fleet.abandon(w)
		t.setState(StateIdle)
		return
	case <-t.s.stopping:
		t.s.fleet.abandon(w)
		t.setState(StateIdle)
		return
	}
	defer t.s.fleet.release(w)

	// A trigger that arrived while this run was queued is satisfied by it:
	// the run reads the table as it is now.
	t.mu.Lock()
	if t.trigSet {
		t.trigSet, t.trigReason = false, ""
		t.counters.Coalesced++
	}
	t.state = StateRunning
	exclude := make(map[string]bool, len(t.quarantine))
	for k := range t.quarantine {
		exclude[k] = true
	}
	t.mu.Unlock()

	start := t.s.cfg.Clock.Now()
	t.log().Info("run starting", "reason", reason, "ops", t.ops())
	var (
		rep RunReport
		ops []OpRecord
		err error
	)
	for _, op := range t.ops() {
		stopLog := t.logProgress(op)
		orep, oerr := t.s.cfg.Run(t.runCtx, RunRequest[P]{Table: t.spec.Name, Op: op, Policy: t.policy, Exclude: exclude, Reason: reason, Progress: t.setProgress})
		stopLog()
		rec := OpRecord{Op: op, Result: resultOf(orep), Report: orep}
		if oerr != nil {
			rec.Result, rec.Error = ResultNoop, oerr.Error() // finish gives the failed operation the run's result
		}
		ops = append(ops, rec)
		rep.add(orep)
		if oerr != nil {
			if op != "" {
				oerr = fmt.Errorf("%s: %w", op, oerr)
			}
			err = oerr
			break
		}
		if orep.Skipped {
			break
		}
	}
	end := t.s.cfg.Clock.Now()
	t.finish(reason, start, end, rep, ops, err)
	t.saveQuarantine(false)
}

func (t *table[P]) finish(reason string, start, end time.Time, rep RunReport, ops []OpRecord, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rec := &RunRecord{Reason: reason, Start: start, End: end, Duration: end.Sub(start).Seconds(), Report: rep, Ops: ops}
	defer func() {
		// The failed operation is the last one; it gets the run's result.
		if err != nil && len(ops) > 0 {
			r := rec.Result
			if r == ResultPartial && !ops[len(ops)-1].Report.Committed {
				r = ResultRetry // an earlier operation made the progress
			}
			ops[len(ops)-1].Result = r
		}
	}()
	t.lastRun = rec
	t.counters.addReport(rep, end.Sub(start))
	if p := rep.Polled; p != nil && p.Backlog != nil && p.Version >= t.lastSeen {
		// The run's commits are seen: the backlog is the one it left.
		b := *p.Backlog
		t.backlog = &b
		if p.Version > t.lastSeen {
			t.lastSeen = p.Version
			t.unevaluated = true
		}
	}
	excludedBefore := len(t.quarantine)
	for _, p := range rep.Quarantined {
		t.quarantineFile(p, QuarantineCorrupt, err, end)
	}
	if err == nil {
		t.countMissing(nil, nil, end)
		rec.Result = resultOf(rep)
		if rep.Committed {
			rec.Result = ResultCommitted // a skip after a commit still committed
		}
		t.counters.countRun(rec.Result)
		t.failures = 0
		t.retryAt = time.Time{}
		t.lastError = ""
		t.lastSuccess = end
		t.waiting = nil // the run read the table
		t.state = StateIdle
		args := []any{"result", rec.Result, "version", rep.ReadVersion}
		if rep.Committed {
			// version is what the run left the table at; read_version what it planned on.
			args = []any{"result", rec.Result, "version", rep.Version, "read_version", rep.ReadVersion}
		}
		args = append(args, "files_removed", rep.FilesRemoved, "files_added", rep.FilesAdded, "counts", rep.Counts)
		if len(rep.Done) > 0 {
			args = append(args, "done", strings.Join(rep.Done, "; "))
		}
		switch why := whyOf(rep.Held); {
		case rec.Result == ResultSkipped:
			args = append(args, "why", rep.SkipReason)
		case rec.Result == ResultNoop && why == "":
			args = append(args, "why", "no operation found work to do")
		case rec.Result == ResultNoop:
			args = append(args, "why", why)
		case why != "":
			args = append(args, "held_back", why)
		}
		t.log().Info("run finished", args...)
		return
	}
	rec.Error = err.Error()
	t.lastError = err.Error()
	if t.stopped() && errors.Is(err, context.Canceled) {
		rec.Result = ResultCancelled
		t.counters.countRun(rec.Result)
		t.state = StateIdle
		t.log().Info("run cancelled by shutdown or removal", "error", err)
		return
	}
	if errors.Is(err, ErrUnavailable) {
		rec.Result = ResultRetry
		t.counters.countRun(rec.Result)
		t.wait(err, end)
		return
	}
	class := failure.Of(err)
	for _, p := range failure.CorruptDataFiles(err) {
		t.quarantineFile(p, QuarantineCorrupt, err, end)
	}
	if len(rep.Missing) > 0 {
		if gone := t.countMissing(rep.Missing, err, end); len(gone) > 0 {
			t.log().Warn("data files missing from the store for consecutive runs; quarantining them", "files", gone, "runs", t.s.cfg.MissingRuns)
		}
	}
	if t.checkQuarantineSize() {
		rec.Result = ResultHalt
		t.counters.countRun(rec.Result)
		t.quarantineDirty = false
		return
	}
	if class == failure.Retry && len(t.quarantine) > excludedBefore {
		// A lasting miss was quarantined: the run failed on it as a corrupt
		// file's run does.
		class = failure.Quarantine
	}
	switch class {
	case failure.Halt:
		rec.Result = ResultHalt
		t.counters.countRun(rec.Result)
		t.halt(err)
		return
	case failure.Quarantine:
		rec.Result = ResultQuarantine
		t.counters.countRun(rec.Result)
		if len(t.quarantine) > excludedBefore {
			// The bad file is on the skip list: go again at once.
			t.failures = 0
			t.retryAt = end
			t.state = StateIdle
			t.log().Warn("data file quarantined; retrying without it", "error", err, "quarantined", len(t.quarantine))
			return
		}
		t.log().Warn("quarantine error without a file to skip; backing off", "error", err)
	default:
		rec.Result = ResultRetry
		if rep.Committed {
			// Progress was made: retry the rest after the first backoff
			// step, not after a growing one.
			rec.Result = ResultPartial
			t.failures = 0
			t.lastSuccess = end
		}
		t.counters.countRun(rec.Result)
	}
	t.failures++
	wait := Backoff(t.failures, t.s.cfg.BackoffBase, t.s.cfg.BackoffMax, t.s.cfg.Rand)
	t.retryAt = end.Add(wait)
	t.state = StateBackoff
	t.log().Warn("run failed; backing off", "error", err, "failures", t.failures, "retry_in", wait)
}

// waiter is the fleet queue's entry of a run of t for reason.
func (t *table[P]) waiter(reason string) *waiter {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := &waiter{name: t.spec.Name, group: t.spec.Group, quota: t.quota(), manual: reason == ReasonAPI}
	if t.lastRun != nil {
		w.lastRun = t.lastRun.End.Sub(t.lastRun.Start)
	}
	last := t.lastSuccess
	if last.IsZero() {
		last = t.s.started
	}
	w.score = Score(t.backlog, t.s.cfg.Clock.Now().Sub(last))
	return w
}

// quota is the table's share of worker time, in workers.
func (t *table[P]) quota() float64 {
	if t.spec.Quota > 0 {
		return t.spec.Quota
	}
	return t.s.cfg.Quota
}
