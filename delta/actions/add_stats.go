package actions

import (
	"fmt"

	"github.com/compactord/compactord/delta/stats"
)

// NumRecords returns the file's physical row count from its statistics:
// ParsedStats when set, else the stats JSON string, scanned for its
// top-level numRecords without building the rest (snapshots keep stats
// unparsed). ok is false when the file has no numRecords statistic; err
// when its stats do not parse.
func (a *Add) NumRecords() (n int64, ok bool, err error) {
	if st := a.ParsedStats; st != nil {
		if st.NumRecords == nil {
			return 0, false, nil
		}
		return *st.NumRecords, true, nil
	}
	if a.Stats == "" {
		return 0, false, nil
	}
	if n, ok, err = stats.ScanStats(a.Stats, false); err != nil {
		return 0, false, fmt.Errorf("stats of %s: %w", a.Path, err)
	}
	return n, ok, nil
}

// FullStats returns the file's statistics parsed: ParsedStats when set
// (stats an action carried already parsed, such as a checkpoint's
// stats_parsed), else the stats JSON string parsed anew on every call
// (snapshots do not keep parsed statistics: they cost several times the
// string). nil, nil when the file has none.
func (a *Add) FullStats() (*stats.Stats, error) {
	if a.ParsedStats != nil || a.Stats == "" {
		return a.ParsedStats, nil
	}
	st, err := stats.ParseStats(a.Stats)
	if err != nil {
		return nil, fmt.Errorf("stats of %s: %w", a.Path, err)
	}
	return st, nil
}

// LiveRows returns numRecords minus the DV cardinality, and false when the
// file has no numRecords statistic (or stats that do not parse).
func (a *Add) LiveRows() (int64, bool) {
	n, ok, err := a.NumRecords()
	if err != nil || !ok {
		return 0, false
	}
	return n - a.NumDeleted(), true
}
