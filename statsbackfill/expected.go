package statsbackfill

import (
	"fmt"

	"github.com/compactord/compactord/delta/scan"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/stats"
	"github.com/compactord/compactord/delta/statscollect"
)

// Kinds of missing statistics.
const (
	// MissingNone: the file's stats cover every column the table indexes.
	MissingNone = iota
	// MissingSome: the file has stats, but not for every indexed column.
	MissingSome
	// MissingAll: the file has no stats (or no numRecords).
	MissingAll
)

// Expected returns the leaf columns (physical dotted paths) whose null
// counts the writer's collector records for snap's table: what
// delta.dataSkippingNumIndexedCols or delta.dataSkippingStatsColumns ask
// for, read from the statistics of an empty file.
func Expected(snap *delta.Snapshot) (map[string]bool, error) {
	schema, err := scan.DataSchema(snap)
	if err != nil {
		return nil, err
	}
	c, err := statscollect.NewStatsCollector(&snap.Metadata, snap.Schema, schema)
	if err != nil {
		return nil, err
	}
	s, err := c.Finish()
	if err != nil {
		return nil, err
	}
	st, err := stats.ParseStats(s)
	if err != nil {
		return nil, fmt.Errorf("statistics of an empty file: %w", err)
	}
	out := map[string]bool{}
	leaves(st.NullCount, "", out)
	return out, nil
}

// leaves adds the dotted paths of the non-object values of m.
func leaves(m map[string]any, prefix string, out map[string]bool) {
	for k, v := range m {
		p := prefix + k
		if sub, ok := v.(map[string]any); ok {
			leaves(sub, p+".", out)
			continue
		}
		out[p] = true
	}
}

// Missing says which statistics a live file lacks against need (from
// Expected).
func Missing(a *actions.Add, need map[string]bool) int {
	st := a.ParsedStats
	if st == nil && a.Stats != "" {
		var err error
		if st, err = stats.ParseStats(a.Stats); err != nil {
			return MissingAll // unreadable stats are no stats
		}
	}
	if st == nil || st.NumRecords == nil {
		return MissingAll
	}
	have := map[string]bool{}
	leaves(st.NullCount, "", have)
	for p := range need {
		if !have[p] {
			return MissingSome
		}
	}
	return MissingNone
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}
