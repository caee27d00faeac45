package predicate

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/compactord/compactord/delta/stats"
)

// ColumnStats are one column's statistics in a file. A nil field is absent.
type ColumnStats struct {
	Min, Max  *Value
	NullCount *int64
}

// FileStats gives a file's statistics to MayMatch.
type FileStats interface {
	// NumRecords is the physical row count, when known.
	NumRecords() (int64, bool)
	// Column returns the statistics of one column (absent fields when the
	// file has none); an error means the statistics exist but do not parse.
	Column(col Column) (ColumnStats, error)
}

// timestampSlackMicros widens a timestamp max: statistics keep
// milliseconds, so the true max can exceed the stat by up to 999µs.
const timestampSlackMicros = 999

// MayMatch reports whether any row of a file with these statistics could
// satisfy e. It answers false only when the statistics prove that no row
// can; missing statistics answer true. Bounds are used as outer bounds, so
// non-tight (deletion-vector) statistics stay safe. An error means the
// statistics could not be evaluated; the caller must then keep the file.
func MayMatch(e Expr, s FileStats) (bool, error) {
	switch x := e.(type) {
	case Const:
		return bool(x), nil
	case Cmp:
		return cmpMayMatch(x, s)
	case In:
		if x.Negated {
			// NOT IN (a, b) = (col != a) AND (col != b).
			for _, v := range x.Values {
				ok, err := cmpMayMatch(Cmp{Col: x.Col, Op: OpNe, Value: v}, s)
				if err != nil || !ok {
					return ok, err
				}
			}
			return true, nil
		}
		for _, v := range x.Values {
			ok, err := cmpMayMatch(Cmp{Col: x.Col, Op: OpEq, Value: v}, s)
			if err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	case IsNull:
		cs, err := s.Column(x.Col)
		if err != nil {
			return true, err
		}
		if cs.NullCount == nil {
			return true, nil
		}
		if !x.Negated {
			return *cs.NullCount > 0, nil
		}
		n, ok := s.NumRecords()
		return !ok || *cs.NullCount < n, nil
	case And:
		for _, t := range x {
			ok, err := MayMatch(t, s)
			if err != nil || !ok {
				return ok || err != nil, err
			}
		}
		return true, nil
	case Or:
		if len(x) == 0 {
			return false, nil
		}
		var firstErr error
		for _, t := range x {
			ok, err := MayMatch(t, s)
			if err != nil && firstErr == nil {
				firstErr = err
			}
			if ok {
				return true, err
			}
		}
		return false, firstErr
	}
	return true, fmt.Errorf("predicate: unknown expression %T", e)
}

func cmpMayMatch(c Cmp, s FileStats) (bool, error) {
	cs, err := s.Column(c.Col)
	if err != nil {
		return true, err
	}
	// A column that is entirely null never satisfies a comparison.
	if n, ok := s.NumRecords(); ok && cs.NullCount != nil && *cs.NullCount == n {
		return false, nil
	}
	if c.Col.Kind == KindFloat && (c.Op == OpGt || c.Op == OpGe || c.Op == OpNe) {
		// NaN sorts above every number, and some engines leave NaN out of
		// max statistics: the stats cannot rule these out.
		return true, nil
	}
	if c.Value.Kind == KindFloat && math.IsNaN(c.Value.F) {
		return true, nil
	}
	lo, hi := cs.Min, cs.Max
	if hi != nil && hi.Kind == KindTimestamp {
		w := *hi
		w.I += timestampSlackMicros
		hi = &w
	}
	cmp := func(a *Value) (int, bool, error) {
		if a == nil {
			return 0, false, nil
		}
		r, err := Compare(*a, c.Value)
		return r, err == nil, err
	}
	switch c.Op {
	case OpEq:
		l, okL, err := cmp(lo)
		if err != nil {
			return true, err
		}
		h, okH, err := cmp(hi)
		if err != nil {
			return true, err
		}
		return !(okL && l > 0) && !(okH && h < 0), nil
	case OpNe:
		l, okL, err := cmp(lo)
		if err != nil {
			return true, err
		}
		h, okH, err := cmp(cs.Max) // exact max: equality with the unwidened stat only
		if err != nil {
			return true, err
		}
		allEqual := okL && okH && l == 0 && h == 0 && (c.Col.Kind != KindTimestamp)
		return !allEqual, nil
	case OpLt, OpLe:
		l, ok, err := cmp(lo)
		if err != nil || !ok {
			return true, err
		}
		if c.Op == OpLt {
			return l < 0, nil
		}
		return l <= 0, nil
	case OpGt, OpGe:
		h, ok, err := cmp(hi)
		if err != nil || !ok {
			return true, err
		}
		if c.Op == OpGt {
			return h > 0, nil
		}
		return h >= 0, nil
	}
	return true, nil
}

// DeltaStats adapts a file's Delta statistics to FileStats. Column paths
// are physical names. A nil *stats.Stats has no statistics at all.
type DeltaStats struct {
	Stats *stats.Stats
}

// NumRecords implements FileStats.
func (d DeltaStats) NumRecords() (int64, bool) {
	if d.Stats == nil || d.Stats.NumRecords == nil {
		return 0, false
	}
	return *d.Stats.NumRecords, true
}

// Column implements FileStats.
func (d DeltaStats) Column(col Column) (ColumnStats, error) {
	var cs ColumnStats
	if d.Stats == nil {
		return cs, nil
	}
	if raw, ok := lookupPath(d.Stats.MinValues, col.Path); ok && raw != nil {
		v, err := ParseStat(col.Kind, raw)
		if err != nil {
			return cs, fmt.Errorf("minValues of %s: %w", col, err)
		}
		cs.Min = &v
	}
	if raw, ok := lookupPath(d.Stats.MaxValues, col.Path); ok && raw != nil {
		v, err := ParseStat(col.Kind, raw)
		if err != nil {
			return cs, fmt.Errorf("maxValues of %s: %w", col, err)
		}
		cs.Max = &v
	}
	if raw, ok := lookupPath(d.Stats.NullCount, col.Path); ok && raw != nil {
		var n int64
		switch x := raw.(type) {
		case json.Number:
			i, err := x.Int64()
			if err != nil {
				return cs, fmt.Errorf("nullCount of %s: %w", col, err)
			}
			n = i
		case float64:
			n = int64(x)
		default:
			return cs, fmt.Errorf("nullCount of %s: unexpected %T", col, raw)
		}
		// With non-tight bounds only 0 and "all rows" carry information
		// (protocol digest, section 7).
		if !d.Stats.Tight() {
			if total, ok := d.NumRecords(); !ok || (n != 0 && n != total) {
				return cs, nil
			}
		}
		cs.NullCount = &n
	}
	return cs, nil
}

func lookupPath(m map[string]any, path []string) (any, bool) {
	var cur any = m
	for _, p := range path {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = obj[p]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}
