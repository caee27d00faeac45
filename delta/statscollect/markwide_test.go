package statscollect

import (
	"strings"
	"testing"
)

// A commit that widens stats refuses stats that do not parse instead of
// leaving them tight, keeps an empty string empty, and marks the rest
// wide.
func TestMarkStatsWideCheckedRefusesStatsThatDoNotParse(t *testing.T) {
	if got, err := MarkStatsWideChecked(""); err != nil || got != "" {
		t.Errorf(`"" gave %q, %v; want "", nil`, got, err)
	}
	if got, err := MarkStatsWideChecked(`{"numRecords":3,`); err == nil || !strings.Contains(err.Error(), "parse stats") {
		t.Errorf("truncated stats gave %q, %v; want a parse error", got, err)
	}
	got, err := MarkStatsWideChecked(`{"numRecords":3,"tightBounds":true}`)
	if err != nil || got != `{"numRecords":3,"tightBounds":false}` {
		t.Errorf("tight stats gave %q, %v", got, err)
	}
}
