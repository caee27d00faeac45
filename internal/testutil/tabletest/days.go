package tabletest

import (
	"testing"

	"github.com/compactord/compactord/delta"
)

// NewDayPairsTable is NewDayTable with n days (0..n-1) of two files each,
// so that a binpack plan has one job a day; it returns every id written.
func NewDayPairsTable(t testing.TB, n int) (*delta.Table, map[int64]bool) {
	t.Helper()
	var days []int
	for d := range n {
		days = append(days, d, d)
	}
	tbl, byDay := NewDayTable(t, days)
	all := map[int64]bool{}
	for _, ids := range byDay {
		for _, id := range ids {
			all[id] = true
		}
	}
	return tbl, all
}
