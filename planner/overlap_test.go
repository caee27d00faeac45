package planner

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/stats"
)

func fileWith(min, max any) *fileInfo {
	return &fileInfo{add: &actions.Add{Path: "f", ParsedStats: &stats.Stats{
		MinValues: map[string]any{"c": min}, MaxValues: map[string]any{"c": max}}}}
}

func TestOverlapMeasureOnValueRanks(t *testing.T) {
	num := func(s string) json.Number { return json.Number(s) }
	for _, tc := range []struct {
		name        string
		kind        valueKind
		files       [][2]any
		want        float64
		withoutStat int
	}{
		// Ranks of {1,2,3,4}: each file spans one step of three.
		{"disjoint numbers", kindNumber, [][2]any{{num("1"), num("2")}, {num("3"), num("4")}}, 1.0 / 3, 0},
		// Same ranks whatever the scale: ranks, not values.
		{"disjoint numbers far apart", kindNumber, [][2]any{{num("1"), num("2")}, {num("3e18"), num("4e18")}}, 1.0 / 3, 0},
		{"identical ranges overlap fully", kindNumber, [][2]any{{num("0"), num("9")}, {num("0"), num("9")}}, 1, 0},
		{"single values", kindString, [][2]any{{"a", "a"}, {"b", "b"}, {"c", "c"}}, 0, 0},
		{"missing stats count as the whole range", kindNumber, [][2]any{{num("1"), num("2")}, {num("3"), num("4")}, {nil, nil}}, 5.0 / 9, 1},
		{"min above max is unusable", kindNumber, [][2]any{{num("5"), num("1")}, {num("1"), num("2")}, {num("3"), num("4")}}, 5.0 / 9, 1},
		// 10:00+02:00 is 08:00Z: the files overlap in time (2/3 each),
		// although as strings they would look disjoint (1/3 each).
		{"instants compare across zones", kindInstant, [][2]any{
			{"2026-01-01T10:00:00.000+02:00", "2026-01-01T10:30:00.000+02:00"},
			{"2026-01-01T08:15:00.000Z", "2026-01-01T09:00:00.000Z"}}, 2.0 / 3, 0},
		{"strings compare bytewise", kindString, [][2]any{{"B", "a"}, {"b", "c"}}, 1.0 / 3, 0},
		{"a number where a string belongs is unusable", kindString, [][2]any{{num("1"), num("2")}, {"a", "b"}, {"c", "d"}}, 5.0 / 9, 1},
		{"decimals written as strings", kindNumber, [][2]any{{"10.5", "10.75"}, {"9.25", "10.25"}}, 1.0 / 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cands []*fileInfo
			for _, f := range tc.files {
				cands = append(cands, fileWith(f[0], f[1]))
			}
			_, cr := measureColumn(cands, column{Logical: []string{"c"}, Physical: []string{"c"}, kind: tc.kind})
			if math.Abs(cr.AvgRelativeRange-tc.want) > 1e-9 || cr.FilesWithoutStats != tc.withoutStat {
				t.Fatalf("avg relative range %v (%d without stats), want %v (%d)", cr.AvgRelativeRange, cr.FilesWithoutStats, tc.want, tc.withoutStat)
			}
		})
	}
}

func TestStatValuesOrderByType(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind valueKind
		a, b any
		want int
	}{
		{"longs beyond float precision", kindNumber, json.Number("9007199254740993"), json.Number("9007199254740992"), 1},
		{"negative numbers", kindNumber, json.Number("-10"), json.Number("-9.5"), -1},
		{"dates", kindInstant, "2024-02-01", "2024-10-01", -1},
		{"ntz timestamps", kindInstant, "2024-01-01T00:00:00.000", "2024-01-01T00:00:00.001", -1},
		{"same instant, two zones", kindInstant, "2024-01-01T02:00:00.000+02:00", "2024-01-01T00:00:00.000Z", 0},
		{"booleans", kindBool, false, true, -1},
		{"inferred numbers", kindUnknown, json.Number("2"), json.Number("10"), -1},
		{"inferred instants", kindUnknown, "2024-01-01T10:00:00Z", "2024-01-01T09:00:00-02:00", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, ok1 := parseStat(tc.a, tc.kind)
			b, ok2 := parseStat(tc.b, tc.kind)
			if !ok1 || !ok2 {
				t.Fatalf("unparsed: %v %v", ok1, ok2)
			}
			if got := compareStat(a, b); got != tc.want {
				t.Fatalf("compare = %d, want %d", got, tc.want)
			}
		})
	}
	for _, bad := range []struct {
		v    any
		kind valueKind
	}{{"not a date", kindInstant}, {true, kindNumber}, {json.Number("1"), kindInstant}, {nil, kindString}, {map[string]any{}, kindUnknown}} {
		if _, ok := parseStat(bad.v, bad.kind); ok {
			t.Errorf("parseStat(%v, %d) accepted", bad.v, bad.kind)
		}
	}
}
