package stats

// Stats are per-file statistics (the add.stats JSON string). Min, max and
// null-count maps mirror the schema with physical column names; nested
// structs are nested maps. Values are kept as decoded JSON (float64 numbers
// are decoded with UseNumber, so json.Number), strings for dates,
// timestamps and strings.
type Stats struct {
	NumRecords  *int64         `json:"numRecords,omitempty"`
	MinValues   map[string]any `json:"minValues,omitempty"`
	MaxValues   map[string]any `json:"maxValues,omitempty"`
	NullCount   map[string]any `json:"nullCount,omitempty"`
	TightBounds *bool          `json:"tightBounds,omitempty"`
}

// Tight reports whether the bounds are tight (a missing tightBounds means true).
func (s *Stats) Tight() bool { return s == nil || s.TightBounds == nil || *s.TightBounds }
