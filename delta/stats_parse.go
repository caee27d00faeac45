package delta

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ParseStats parses an add.stats JSON string. Numbers are kept as
// json.Number so that longs and decimals keep their exact text; dates,
// timestamps and strings stay strings. An empty string yields (nil, nil):
// missing stats mean "unknown", never "empty".
func ParseStats(s string) (*Stats, error) {
	if s == "" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var st Stats
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("parse stats: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("parse stats: trailing data after the stats object")
	}
	return &st, nil
}

// LiveRows returns numRecords minus the DV cardinality, and false when the
// file has no numRecords statistic.
func (a *Add) LiveRows() (int64, bool) {
	if a.ParsedStats == nil || a.ParsedStats.NumRecords == nil {
		return 0, false
	}
	return *a.ParsedStats.NumRecords - a.NumDeleted(), true
}
