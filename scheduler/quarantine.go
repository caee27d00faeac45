package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/compactord/compactord/failure"
)

// Reasons a data file is quarantined (Quarantined.Reason).
const (
	// QuarantineCorrupt: a run read the file and its content is bad
	// (failure.CorruptFileError).
	QuarantineCorrupt = "corrupt"
	// QuarantineMissing: the newest snapshot names the file but the store
	// has no such object, for Config.MissingRuns consecutive runs
	// (RunReport.Missing).
	QuarantineMissing = "missing"
)

// Quarantined is a data file every run of its table skips, and why.
type Quarantined struct {
	// Path is the file's path as its add action spells it (the key of
	// RunRequest.Exclude).
	Path string `json:"path"`
	// Reason is QuarantineCorrupt or QuarantineMissing.
	Reason string `json:"reason"`
	// Error is the error that quarantined it (cut to MaxQuarantineError
	// bytes).
	Error string `json:"error,omitempty"`
	// Since is when it was quarantined.
	Since time.Time `json:"since"`
}

// MaxQuarantineError bounds Quarantined.Error, so that a table's stored
// list stays small.
const MaxQuarantineError = 512

// QuarantineStore keeps each table's quarantine list where a restart of the
// daemon finds it. The scheduler loads a table's list before its first
// run and saves it whenever it changed; both run on the goroutine working
// the table, never under the scheduler's locks.
type QuarantineStore[P any] interface {
	// Load returns the table's stored list (empty when there is none).
	Load(ctx context.Context, p P) ([]Quarantined, error)
	// Save stores qs as the table's list and returns the list now stored,
	// which the scheduler adopts: an implementation may merge in what
	// another replica stored, and drop files the table no longer holds.
	Save(ctx context.Context, p P, qs []Quarantined) ([]Quarantined, error)
}

// Defaults of the quarantine settings of Config.
const (
	// DefaultMissingRuns is Config.MissingRuns's default: a file the newest
	// snapshot names stays missing for 4 consecutive runs, which under the
	// default backoff (5s doubling) spans at least 17 s and about 35 s,
	// past the listing and replication lag of any store, before it is
	// quarantined.
	DefaultMissingRuns = 4
	// DefaultMaxQuarantined is Config.MaxQuarantined's default.
	DefaultMaxQuarantined = 1000
)

// ErrTooManyQuarantined halts a table whose quarantine list would pass
// Config.MaxQuarantined: that many bad files is not a file's fault.
var ErrTooManyQuarantined = failure.New(failure.Halt, "too many quarantined files")

// quarantineList returns t's list sorted by path; t.mu must be held.
func (t *table[P]) quarantineList() []Quarantined {
	out := make([]Quarantined, 0, len(t.quarantine))
	for _, q := range t.quarantine {
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// quarantineFile adds path to t's list unless it is there; t.mu must be
// held. It reports whether the list grew.
func (t *table[P]) quarantineFile(path, reason string, err error, now time.Time) bool {
	if _, ok := t.quarantine[path]; ok {
		return false
	}
	msg := ""
	if err != nil {
		msg = err.Error()
		if len(msg) > MaxQuarantineError {
			msg = msg[:MaxQuarantineError]
		}
	}
	if t.quarantine == nil {
		t.quarantine = map[string]Quarantined{}
	}
	t.quarantine[path] = Quarantined{Path: path, Reason: reason, Error: msg, Since: now.UTC()}
	delete(t.missing, path)
	t.quarantineDirty = true
	return true
}

// countMissing records one run's missing files (RunReport.Missing) and
// quarantines those missing for Config.MissingRuns consecutive runs; t.mu
// must be held. A run that met none of them ends their counts; it returns
// the files it quarantined.
func (t *table[P]) countMissing(missing []string, err error, now time.Time) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range missing {
		if seen[p] {
			continue
		}
		seen[p] = true
		if _, ok := t.quarantine[p]; ok {
			continue
		}
		if t.missing == nil {
			t.missing = map[string]int{}
		}
		t.missing[p]++
		if t.missing[p] >= t.s.cfg.MissingRuns {
			t.quarantineFile(p, QuarantineMissing, err, now)
			out = append(out, p)
		}
	}
	for p := range t.missing {
		if !seen[p] {
			delete(t.missing, p)
		}
	}
	return out
}

// loadQuarantine reads t's stored list once, before its first run; a
// failed load is tried again before the next run.
func (t *table[P]) loadQuarantine() {
	st := t.s.cfg.Quarantine
	t.mu.Lock()
	done := t.quarantineLoaded || st == nil
	t.mu.Unlock()
	if done {
		return
	}
	qs, err := st.Load(t.runCtx, t.policy)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			// The table is waiting; its poll says why.
			t.log().Debug("reading the stored quarantine list failed; trying again before the next run", "error", err)
		} else {
			t.log().Warn("reading the stored quarantine list failed; trying again before the next run", "error", err)
		}
		return
	}
	t.quarantineLoaded = true
	for _, q := range qs {
		if _, ok := t.quarantine[q.Path]; !ok && q.Path != "" {
			if t.quarantine == nil {
				t.quarantine = map[string]Quarantined{}
			}
			t.quarantine[q.Path] = q
		}
	}
	if len(qs) > 0 {
		t.log().Info("stored quarantine list loaded", "quarantined", len(t.quarantine))
	}
}

// saveQuarantine stores t's list when it changed since the last save (or
// when force is set) and adopts what the store kept.
func (t *table[P]) saveQuarantine(force bool) {
	st := t.s.cfg.Quarantine
	if st == nil {
		return
	}
	t.mu.Lock()
	if !t.quarantineDirty && !force {
		t.mu.Unlock()
		return
	}
	qs := t.quarantineList()
	t.mu.Unlock()
	kept, err := st.Save(t.runCtx, t.policy, qs)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.quarantineDirty = true
		t.log().Warn("storing the quarantine list failed; trying again after the next run", "error", err)
		return
	}
	t.quarantineDirty = false
	t.quarantine = nil
	if len(kept) > 0 {
		t.quarantine = make(map[string]Quarantined, len(kept))
	}
	for _, q := range kept {
		t.quarantine[q.Path] = q
	}
}

// checkQuarantineSize halts t when its list passed Config.MaxQuarantined;
// t.mu must be held. It reports whether it halted.
func (t *table[P]) checkQuarantineSize() bool {
	if len(t.quarantine) <= t.s.cfg.MaxQuarantined {
		return false
	}
	t.halt(fmt.Errorf("%w: %d files, more than %d: check the table's storage", ErrTooManyQuarantined, len(t.quarantine), t.s.cfg.MaxQuarantined))
	return true
}
