package planner

import (
	"encoding/json"
	"math/big"
	"strings"
	"time"

	"github.com/compactord/compactord/delta/schema"
)

// valueKind is how a column's stats values are ordered.
type valueKind int

const (
	kindUnknown   valueKind = iota // infer from the JSON value
	kindNumber                     // integers, floats, decimals: numerically
	kindString                     // strings: lexically (UTF-8 byte order, as Spark)
	kindInstant                    // date, timestamp, timestamp_ntz: as instants
	kindBool                       // false < true
	kindUnordered                  // binary, nested, variant...: no order
)

// kindOf maps a Delta type to how its stats order.
func kindOf(t *schema.DataType) valueKind {
	if t == nil {
		return kindUnknown
	}
	switch {
	case t.Struct != nil || t.ElementType != nil || t.KeyType != nil:
		return kindUnordered
	case t.Precision > 0 || strings.HasPrefix(t.Name, "decimal"):
		return kindNumber
	}
	switch t.Name {
	case "byte", "short", "integer", "long", "float", "double":
		return kindNumber
	case "string":
		return kindString
	case "date", "timestamp", "timestamp_ntz":
		return kindInstant
	case "boolean":
		return kindBool
	}
	return kindUnordered
}

// statValue is one parsed min/max statistic.
type statValue struct {
	kind valueKind
	num  *big.Float
	str  string
	t    time.Time
	b    bool
}

// instantLayouts are the forms Delta writers use for date and timestamp
// stats (Spark writes ms with a zone offset or Z; NTZ has no zone).
var instantLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02",
}

func parseInstant(s string) (time.Time, bool) {
	for _, l := range instantLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func parseNumber(s string) (*big.Float, bool) {
	f, _, err := big.ParseFloat(s, 10, 128, big.ToNearestEven)
	if err != nil {
		return nil, false
	}
	return f, true
}

// parseStat interprets a decoded JSON stat for a column of the given kind.
// ok is false when the value is absent, null or not of the column's kind.
func parseStat(v any, kind valueKind) (statValue, bool) {
	switch x := v.(type) {
	case nil:
		return statValue{}, false
	case json.Number:
		if kind != kindUnknown && kind != kindNumber {
			return statValue{}, false
		}
		f, ok := parseNumber(string(x))
		return statValue{kind: kindNumber, num: f}, ok
	case float64:
		if kind != kindUnknown && kind != kindNumber {
			return statValue{}, false
		}
		return statValue{kind: kindNumber, num: new(big.Float).SetPrec(128).SetFloat64(x)}, x == x
	case int64:
		if kind != kindUnknown && kind != kindNumber {
			return statValue{}, false
		}
		return statValue{kind: kindNumber, num: new(big.Float).SetPrec(128).SetInt64(x)}, true
	case bool:
		if kind != kindUnknown && kind != kindBool {
			return statValue{}, false
		}
		return statValue{kind: kindBool, b: x}, true
	case string:
		switch kind {
		case kindString:
			return statValue{kind: kindString, str: x}, true
		case kindInstant, kindUnknown:
			if t, ok := parseInstant(x); ok {
				return statValue{kind: kindInstant, t: t}, true
			}
			if kind == kindInstant {
				return statValue{}, false
			}
			return statValue{kind: kindString, str: x}, true
		case kindNumber:
			// Decimals and special floats may be written as strings.
			f, ok := parseNumber(x)
			return statValue{kind: kindNumber, num: f}, ok
		}
	}
	return statValue{}, false
}

// compareStat orders two values of the same kind.
func compareStat(a, b statValue) int {
	switch a.kind {
	case kindNumber:
		return a.num.Cmp(b.num)
	case kindString:
		return strings.Compare(a.str, b.str)
	case kindInstant:
		return a.t.Compare(b.t)
	case kindBool:
		switch {
		case a.b == b.b:
			return 0
		case !a.b:
			return -1
		}
		return 1
	}
	return 0
}

// statAt walks a nested stats map along a physical column path.
func statAt(m map[string]any, path []string) (any, bool) {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = mm[p]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

// fileRange returns a file's (min, max) for a column, when its stats have
// both, of one kind, with min <= max.
func fileRange(f *fileInfo, c column) (lo, hi statValue, ok bool) {
	s := f.fullStats()
	if s == nil {
		return lo, hi, false
	}
	mn, ok1 := statAt(s.MinValues, c.Physical)
	mx, ok2 := statAt(s.MaxValues, c.Physical)
	if !ok1 || !ok2 {
		return lo, hi, false
	}
	lo, ok1 = parseStat(mn, c.kind)
	hi, ok2 = parseStat(mx, c.kind)
	if !ok1 || !ok2 || lo.kind != hi.kind || compareStat(lo, hi) > 0 {
		return lo, hi, false
	}
	return lo, hi, true
}
