package clusteradvise

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/units"
)

// RecordPushed adds a batch of pushed predicates to the table's stored
// evidence (one compare-and-swap) and returns the stored record.
func RecordPushed(ctx context.Context, t *delta.Table, batch []Pushed, now time.Time) (*Record, error) {
	cs, err := t.Conditional()
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t.Name(), err)
	}
	rec, err := Update(ctx, cs, func(rec *Record) error {
		rec.DecayTo(now)
		for i, p := range batch {
			if err := rec.Add(p.Predicate, p.Weight, p.Time, SourcePush); err != nil {
				return fmt.Errorf("predicate %d: %w", i+1, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t.Name(), err)
	}
	return rec, nil
}

// Report is what `compactord clustering advise` prints (its --json form).
type Report struct {
	Table   string `json:"table"`
	Version int64  `json:"version"`
	// Current is the table's clustering key (logical names).
	Current []string `json:"current"`
	// Gathered counts the DML commits read since the stored record was
	// last gathered (not saved by the advice).
	Gathered     GatherStats `json:"gathered"`
	Advice       *Advice     `json:"advice"`
	Verdict      string      `json:"verdict"`
	Change       bool        `json:"change"`
	Key          []string    `json:"key"`
	LastDecision *Decision   `json:"last_decision,omitempty"`
}

// AdviseNow loads the table's stored evidence, adds the DML commits after
// it up to snap (in memory: nothing is saved), and advises.
func AdviseNow(ctx context.Context, t *delta.Table, snap *delta.Snapshot, now time.Time, targetFileSize int64, sampleRows int, opts Options) (*Report, error) {
	cs, err := t.Conditional()
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t.Name(), err)
	}
	rec, _, err := Load(ctx, cs)
	if err != nil && rec == nil {
		return nil, fmt.Errorf("table %s: %w", t.Name(), err)
	}
	st, err := GatherLog(ctx, t, rec, snap.Version)
	if err != nil {
		return nil, err
	}
	rec.DecayTo(now)
	adv, err := AdviseTable(ctx, t, snap, rec, targetFileSize, sampleRows, opts)
	if err != nil {
		return nil, err
	}
	cur, err := CurrentKey(snap)
	if err != nil {
		return nil, err
	}
	v := Decide(adv, rec.StateFor(cur), now, opts)
	return &Report{Table: t.Name(), Version: snap.Version, Current: cur, Gathered: st, Advice: adv,
		Verdict: v.Reason, Change: v.Change, Key: v.Key, LastDecision: rec.LastDecision()}, nil
}

// WriteText prints the report for a person.
func (r *Report) WriteText(w io.Writer) error {
	a := r.Advice
	var b strings.Builder
	fmt.Fprintf(&b, "table %s at version %d: %d files, %s; current key %s\n", r.Table, r.Version, a.Files, units.FormatBytes(a.TableBytes), keyString(r.Current))
	fmt.Fprintf(&b, "evidence: %.1f (decayed weight), %.1f predicates a day; %d replayed, %d unreadable; %d new DML commits read\n",
		a.EvidenceWeight, a.EvidenceRate, a.Replayed, a.Unparsed, r.Gathered.Commits)
	fmt.Fprintf(&b, "layout simulated: %d files from a sample of %d rows\n\n", a.LayoutFiles, a.SampleRows)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "rank\tkey\tfiles read\tbytes read\tgain\tsaved a day\tscore a day")
	fmt.Fprintf(tw, "-\t(current layout)\t%.1f\t%s\t-\t-\t-\n", a.Baseline.FilesRead, units.FormatBytes(int64(a.Baseline.BytesRead)))
	if a.CurrentKey != nil {
		e := a.CurrentKey
		fmt.Fprintf(tw, "-\t%s (current key)\t%.1f\t%s\t%.0f%%\t%s\t%s\n", keyString(e.Key), e.FilesRead, units.FormatBytes(int64(e.BytesRead)), 100*e.Gain, signedBytes(e.SavedPerDay), signedBytes(e.Score))
	}
	for i, e := range a.Ranking {
		if i == 10 {
			fmt.Fprintf(tw, "...\t%d more\t\t\t\t\t\n", len(a.Ranking)-10)
			break
		}
		fmt.Fprintf(tw, "%d\t%s\t%.1f\t%s\t%.0f%%\t%s\t%s\n", i+1, keyString(e.Key), e.FilesRead, units.FormatBytes(int64(e.BytesRead)), 100*e.Gain, signedBytes(e.SavedPerDay), signedBytes(e.Score))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(a.Predicates) > 0 {
		fmt.Fprintln(&b, "\nheaviest predicates (files read now -> under the best key):")
		for i, p := range a.Predicates {
			if i == 10 {
				fmt.Fprintf(&b, "  ... %d more\n", len(a.Predicates)-10)
				break
			}
			fmt.Fprintf(&b, "  %6.1f  %-40s %d -> %.1f\n", p.Weight, clip(p.Predicate, 40), p.CurrentFiles, p.BestFiles)
		}
	}
	verdict := "keep " + keyString(r.Key)
	if r.Change {
		verdict = "set " + keyString(r.Key)
	}
	fmt.Fprintf(&b, "\nverdict: %s: %s\n", verdict, r.Verdict)
	if d := r.LastDecision; d != nil {
		fmt.Fprintf(&b, "last decision: %s: %s -> %s (applied %v) %s\n", d.At.Format(time.RFC3339), keyString(d.Old), keyString(d.New), d.Applied, d.Reason)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func signedBytes(f float64) string {
	if f < 0 {
		return "-" + units.FormatBytes(int64(-f))
	}
	return units.FormatBytes(int64(f))
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
