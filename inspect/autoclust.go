package inspect

import (
	"context"
	"errors"
	"time"

	"github.com/compactord/compactord/clusteradvise"
	"github.com/compactord/compactord/delta"
)

// AutoClustering is what CLUSTER BY AUTO recorded for the table
// (`_compactord/clustering.json`): the keys it set, its last verdict and
// its last change or refusal. Nil when it never ran.
type AutoClustering struct {
	// Keys are the keys auto clustering set, since KeysSince.
	Keys      []string  `json:"keys"`
	KeysSince time.Time `json:"keysSince,omitzero"`
	// Checked is when it last decided, Verdict why.
	Checked time.Time `json:"checked,omitzero"`
	Verdict string    `json:"verdict,omitempty"`
	// Predicates and EvidencePerDay describe the evidence kept.
	Predicates     int     `json:"predicates"`
	EvidencePerDay float64 `json:"evidencePerDay"`
	// LastDecision is the newest change or refusal.
	LastDecision *clusteradvise.Decision `json:"lastDecision,omitempty"`
}

// LoadAutoClustering adds the table's CLUSTER BY AUTO record to rep (an
// absent record leaves it nil; an unreadable one is skipped: the record is
// the daemon's, and inspect reports the table).
func LoadAutoClustering(ctx context.Context, t *delta.Table, rep *Report) error {
	cs, err := t.Conditional()
	if err != nil {
		return nil
	}
	rec, token, err := clusteradvise.Load(ctx, cs)
	switch {
	case errors.Is(err, clusteradvise.ErrUnreadableRecord):
		return nil
	case err != nil:
		return err
	case token == "":
		return nil
	}
	rep.AutoClustering = &AutoClustering{Keys: rec.Keys, KeysSince: rec.KeysSince, Checked: rec.Checked, Verdict: rec.Verdict,
		Predicates: len(rec.Entries), EvidencePerDay: rec.RatePerDay(), LastDecision: rec.LastDecision()}
	return nil
}
