package clusteradvise

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Bounds of the evidence record.
const (
	// MaxEntries is the most predicates a record keeps; past it the ones
	// of least decayed weight go.
	MaxEntries = 2048
	// MaxPredicateLen is the longest predicate text kept.
	MaxPredicateLen = 4 << 10
	// MaxDecisions is how many key changes a record remembers.
	MaxDecisions = 16
	// minWeight is the decayed weight under which an entry is dropped.
	minWeight = 1e-3
	// recordVersion is the format of Record.
	recordVersion = 1
)

// DefaultHalfLife is the evidence's default half-life: a predicate seen a
// week ago counts half as much as one seen now.
const DefaultHalfLife = 7 * 24 * time.Hour

// Where a predicate came from.
const (
	SourceLog  = "log"
	SourcePush = "push"
)

// Entry is one distinct predicate text and its decayed weight.
type Entry struct {
	Predicate string `json:"predicate"`
	// Weight is decayed to the record's AsOf.
	Weight float64 `json:"weight"`
	// Count is how many times the predicate was recorded.
	Count int64 `json:"count"`
	// Last is when it was last recorded (the commit's time, or the pushed
	// time).
	Last time.Time `json:"last"`
	// Source is SourceLog or SourcePush (the latest one).
	Source string `json:"source"`
}

// Decision is one change of a table's clustering keys made by auto
// clustering, or one refusal to make it.
type Decision struct {
	At time.Time `json:"at"`
	// Version is the table version the change was committed as (0 for a
	// refusal).
	Version int64    `json:"version,omitempty"`
	Old     []string `json:"old"`
	New     []string `json:"new"`
	// Applied is false for a change that was decided but refused (Reason).
	Applied bool   `json:"applied"`
	Reason  string `json:"reason,omitempty"`
	// Evidence is the predicates' total decayed weight and their rate per
	// day when it was made.
	EvidenceWeight float64 `json:"evidence_weight"`
	EvidenceRate   float64 `json:"evidence_per_day"`
	// OldEstimate and NewEstimate are the estimated bytes read per
	// predicate under the old and new keys.
	OldBytesRead float64 `json:"old_bytes_read"`
	NewBytesRead float64 `json:"new_bytes_read"`
	Score        float64 `json:"score"`
}

// Record is the stored evidence of one table, with the keys auto
// clustering chose and its last decisions.
type Record struct {
	Version int `json:"version"`
	// AsOf is the time every Weight is decayed to.
	AsOf time.Time `json:"as_of"`
	// HalfLife is the decay the weights were kept with.
	HalfLife Duration `json:"half_life"`
	// LogVersion is the last table version whose commit was gathered (-1:
	// none yet).
	LogVersion int64   `json:"log_version"`
	Entries    []Entry `json:"entries"`
	// Keys are the keys auto clustering last set (logical names), and
	// KeysSince when.
	Keys      []string  `json:"keys,omitempty"`
	KeysSince time.Time `json:"keys_since,omitzero"`
	// Pending is a replacement key waiting for confirmation (Decide), and
	// PendingSince since when.
	Pending      []string  `json:"pending,omitempty"`
	PendingSince time.Time `json:"pending_since,omitzero"`
	// Checked is when auto clustering last decided, and Verdict its reason.
	Checked time.Time `json:"checked,omitzero"`
	Verdict string    `json:"verdict,omitempty"`
	// Decisions are the newest last, at most MaxDecisions.
	Decisions []Decision `json:"decisions,omitempty"`
}

// Duration is a time.Duration stored as its text ("168h0m0s").
type Duration time.Duration

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// NewRecord returns an empty record decaying with halfLife (0: the default).
func NewRecord(halfLife time.Duration) *Record {
	if halfLife <= 0 {
		halfLife = DefaultHalfLife
	}
	return &Record{Version: recordVersion, HalfLife: Duration(halfLife), LogVersion: -1}
}

func (r *Record) halfLife() time.Duration {
	if r.HalfLife <= 0 {
		return DefaultHalfLife
	}
	return time.Duration(r.HalfLife)
}

func decayFactor(d, halfLife time.Duration) float64 {
	if d <= 0 {
		return 1
	}
	return math.Exp2(-float64(d) / float64(halfLife))
}

// DecayTo decays every weight to now (a now before AsOf changes nothing)
// and drops the entries that decayed away.
func (r *Record) DecayTo(now time.Time) {
	now = now.UTC()
	if !now.After(r.AsOf) {
		return
	}
	f := decayFactor(now.Sub(r.AsOf), r.halfLife())
	kept := r.Entries[:0]
	for _, e := range r.Entries {
		e.Weight *= f
		if e.Weight >= minWeight {
			kept = append(kept, e)
		}
	}
	r.Entries = kept
	r.AsOf = now
}

// Add records one predicate of weight w seen at time at (a time after
// AsOf first decays the record to it). The text is trimmed; an empty or
// oversized text or a weight that is not a positive finite number is an
// error.
func (r *Record) Add(text string, w float64, at time.Time, source string) error {
	text = strings.TrimSpace(text)
	switch {
	case text == "":
		return fmt.Errorf("empty predicate")
	case len(text) > MaxPredicateLen:
		return fmt.Errorf("predicate of %d bytes, over %d", len(text), MaxPredicateLen)
	case !(w > 0) || math.IsInf(w, 0):
		return fmt.Errorf("weight %v: want a positive number", w)
	}
	at = at.UTC()
	if at.After(r.AsOf) {
		r.DecayTo(at)
	}
	w *= decayFactor(r.AsOf.Sub(at), r.halfLife())
	for i := range r.Entries {
		e := &r.Entries[i]
		if e.Predicate == text {
			e.Weight += w
			e.Count++
			if at.After(e.Last) {
				e.Last, e.Source = at, source
			}
			return nil
		}
	}
	r.Entries = append(r.Entries, Entry{Predicate: text, Weight: w, Count: 1, Last: at, Source: source})
	r.bound()
	return nil
}

// bound keeps at most MaxEntries entries, the heaviest, in a stable order
// (heaviest first, then by text).
func (r *Record) bound() {
	if len(r.Entries) <= MaxEntries {
		return
	}
	r.sortEntries()
	r.Entries = r.Entries[:MaxEntries]
}

func (r *Record) sortEntries() {
	sort.SliceStable(r.Entries, func(i, j int) bool {
		a, b := r.Entries[i], r.Entries[j]
		if a.Weight != b.Weight {
			return a.Weight > b.Weight
		}
		return a.Predicate < b.Predicate
	})
}

// TotalWeight is the sum of the decayed weights.
func (r *Record) TotalWeight() float64 {
	var s float64
	for _, e := range r.Entries {
		s += e.Weight
	}
	return s
}

// RatePerDay estimates how many predicates a day the evidence stands for:
// a steady rate of q a day decays to a total weight of q·h/ln 2 (h the
// half-life in days), so the rate is the total weight · ln 2 / h.
func (r *Record) RatePerDay() float64 {
	days := r.halfLife().Hours() / 24
	return r.TotalWeight() * math.Ln2 / days
}

// AddDecision appends d, keeping the newest MaxDecisions.
func (r *Record) AddDecision(d Decision) {
	r.Decisions = append(r.Decisions, d)
	if n := len(r.Decisions) - MaxDecisions; n > 0 {
		r.Decisions = append([]Decision(nil), r.Decisions[n:]...)
	}
}

// LastDecision returns the newest decision, nil when there is none.
func (r *Record) LastDecision() *Decision {
	if len(r.Decisions) == 0 {
		return nil
	}
	return &r.Decisions[len(r.Decisions)-1]
}

// StateFor is Decide's state for a table whose key is now current: the
// record's dwell and pending replacement count only while the key in force
// is the one auto clustering set.
func (r *Record) StateFor(current []string) State {
	st := State{Current: current}
	if sameKey(r.Keys, current) {
		st.Since = r.KeysSince
		st.Pending, st.PendingSince = r.Pending, r.PendingSince
	}
	return st
}
