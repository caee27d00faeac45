package predicate

import (
	"fmt"
	"strings"
)

// Truth is a SQL three-valued truth value.
type Truth int8

// The three truth values.
const (
	False Truth = iota
	Unknown
	True
)

// Row gives a row's value of a column; ok=false means NULL.
type Row interface {
	Lookup(col Column) (v Value, ok bool, err error)
}

// MapRow is a Row keyed by the dotted column path.
type MapRow map[string]*Value

// Lookup implements Row.
func (m MapRow) Lookup(col Column) (Value, bool, error) {
	v := m[dotted(col.Path)]
	if v == nil {
		return Value{}, false, nil
	}
	return *v, true, nil
}

func dotted(path []string) string { return strings.Join(path, ".") }

// EvalRow evaluates e on one row with SQL three-valued logic. A row
// matches a predicate only when the result is True.
func EvalRow(e Expr, r Row) (Truth, error) {
	switch x := e.(type) {
	case Const:
		if x {
			return True, nil
		}
		return False, nil
	case Cmp:
		v, ok, err := r.Lookup(x.Col)
		if err != nil || !ok {
			return Unknown, err
		}
		c, err := Compare(v, x.Value)
		if err != nil {
			return Unknown, fmt.Errorf("%s: %w", x, err)
		}
		return truth(opHolds(x.Op, c)), nil
	case In:
		v, ok, err := r.Lookup(x.Col)
		if err != nil || !ok {
			return Unknown, err
		}
		found := false
		for _, lit := range x.Values {
			c, err := Compare(v, lit)
			if err != nil {
				return Unknown, fmt.Errorf("%s: %w", x, err)
			}
			if c == 0 {
				found = true
				break
			}
		}
		return truth(found != x.Negated), nil
	case IsNull:
		_, ok, err := r.Lookup(x.Col)
		if err != nil {
			return Unknown, err
		}
		return truth(!ok != x.Negated), nil
	case And:
		return evalJunction(x, r, False)
	case Or:
		return evalJunction(x, r, True)
	}
	return Unknown, fmt.Errorf("predicate: unknown expression %T", e)
}

// evalJunction evaluates the terms of an And (decisive False) or an Or
// (decisive True) on r: the first decisive term decides; else Unknown when
// a term is, else the other value.
func evalJunction(terms []Expr, r Row, decisive Truth) (Truth, error) {
	out := truth(decisive == False)
	for _, t := range terms {
		v, err := EvalRow(t, r)
		if err != nil {
			return Unknown, err
		}
		if v == decisive {
			return decisive, nil
		}
		if v == Unknown {
			out = Unknown
		}
	}
	return out, nil
}

func truth(b bool) Truth {
	if b {
		return True
	}
	return False
}

func opHolds(op Op, c int) bool {
	switch op {
	case OpEq:
		return c == 0
	case OpNe:
		return c != 0
	case OpLt:
		return c < 0
	case OpLe:
		return c <= 0
	case OpGt:
		return c > 0
	case OpGe:
		return c >= 0
	}
	return false
}
