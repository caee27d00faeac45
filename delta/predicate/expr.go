package predicate

import (
	"fmt"
	"strings"
)

// Op is a comparison operator.
type Op int

// The comparison operators.
const (
	OpEq Op = iota
	OpNe
	OpLt
	OpLe
	OpGt
	OpGe
)

var opText = [...]string{"=", "!=", "<", "<=", ">", ">="}

func (o Op) String() string { return opText[o] }

// negate returns the operator of NOT (a op b) under SQL semantics.
func (o Op) negate() Op {
	return [...]Op{OpNe, OpEq, OpGe, OpGt, OpLe, OpLt}[o]
}

// Column names a column by its physical path (nested struct fields have
// several elements) and its comparison kind.
type Column struct {
	Path []string
	Kind Kind
}

// String renders the column as a dotted, back-quoted name.
func (c Column) String() string {
	parts := make([]string, len(c.Path))
	for i, p := range c.Path {
		parts[i] = "`" + p + "`"
	}
	return strings.Join(parts, ".")
}

func (c Column) key() string { return strings.Join(c.Path, "\x00") }

// Expr is a predicate in negation normal form: NOT is pushed into the
// leaves when the expression is built (see Not), so evaluation never meets it.
type Expr interface {
	// String renders the predicate in SQL-like text (commit metadata, logs).
	String() string
	isExpr()
}

// Const is TRUE or FALSE.
type Const bool

// Cmp is `column op literal`.
type Cmp struct {
	Col   Column
	Op    Op
	Value Value
}

// In is `column IN (values)` or, with Negated, `column NOT IN (values)`.
type In struct {
	Col     Column
	Values  []Value
	Negated bool
}

// IsNull is `column IS NULL` or, with Negated, `column IS NOT NULL`.
type IsNull struct {
	Col     Column
	Negated bool
}

// And is the conjunction of its terms (TRUE when empty).
type And []Expr

// Or is the disjunction of its terms (FALSE when empty).
type Or []Expr

func (Const) isExpr()  {}
func (Cmp) isExpr()    {}
func (In) isExpr()     {}
func (IsNull) isExpr() {}
func (And) isExpr()    {}
func (Or) isExpr()     {}

func (c Const) String() string {
	if c {
		return "true"
	}
	return "false"
}

func (c Cmp) String() string { return fmt.Sprintf("%s %s %s", c.Col, c.Op, c.Value) }

func (in In) String() string {
	vals := make([]string, len(in.Values))
	for i, v := range in.Values {
		vals[i] = v.String()
	}
	not := ""
	if in.Negated {
		not = "NOT "
	}
	return fmt.Sprintf("%s %sIN (%s)", in.Col, not, strings.Join(vals, ", "))
}

func (n IsNull) String() string {
	if n.Negated {
		return n.Col.String() + " IS NOT NULL"
	}
	return n.Col.String() + " IS NULL"
}

func (a And) String() string { return join(a, " AND ", "true") }
func (o Or) String() string  { return join(o, " OR ", "false") }

func join(terms []Expr, sep, empty string) string {
	if len(terms) == 0 {
		return empty
	}
	parts := make([]string, len(terms))
	for i, t := range terms {
		parts[i] = "(" + t.String() + ")"
	}
	return strings.Join(parts, sep)
}

// NewCmp builds `col op v`, checking that the literal fits the column.
func NewCmp(col Column, op Op, v Value) (Expr, error) {
	if err := checkKinds(col, v); err != nil {
		return nil, err
	}
	return Cmp{Col: col, Op: op, Value: v}, nil
}

// NewIn builds `col IN (values)`.
func NewIn(col Column, values ...Value) (Expr, error) {
	for _, v := range values {
		if err := checkKinds(col, v); err != nil {
			return nil, err
		}
	}
	return In{Col: col, Values: values}, nil
}

func checkKinds(col Column, v Value) error {
	if col.Kind == KindInvalid {
		return fmt.Errorf("column %s has a type predicates cannot compare", col)
	}
	if col.Kind == v.Kind {
		return nil
	}
	if (col.Kind == KindFloat || col.Kind == KindDecimal) && v.Kind == KindInt {
		return nil
	}
	return fmt.Errorf("column %s (%v) compared with a %v literal", col, col.Kind, v.Kind)
}

// Not returns the negation of e in negation normal form, with SQL
// three-valued semantics preserved (De Morgan holds in Kleene logic).
func Not(e Expr) Expr {
	switch x := e.(type) {
	case Const:
		return !x
	case Cmp:
		return Cmp{Col: x.Col, Op: x.Op.negate(), Value: x.Value}
	case In:
		return In{Col: x.Col, Values: x.Values, Negated: !x.Negated}
	case IsNull:
		return IsNull{Col: x.Col, Negated: !x.Negated}
	case And:
		out := make(Or, len(x))
		for i, t := range x {
			out[i] = Not(t)
		}
		return out
	case Or:
		out := make(And, len(x))
		for i, t := range x {
			out[i] = Not(t)
		}
		return out
	}
	panic(fmt.Sprintf("predicate: unknown expression %T", e))
}

// Columns lists the distinct columns an expression references, in first-use order.
func Columns(e Expr) []Column {
	var out []Column
	seen := map[string]bool{}
	var walk func(Expr)
	walk = func(e Expr) {
		var c *Column
		switch x := e.(type) {
		case Cmp:
			c = &x.Col
		case In:
			c = &x.Col
		case IsNull:
			c = &x.Col
		case And:
			for _, t := range x {
				walk(t)
			}
		case Or:
			for _, t := range x {
				walk(t)
			}
		}
		if c != nil && !seen[c.key()] {
			seen[c.key()] = true
			out = append(out, *c)
		}
	}
	walk(e)
	return out
}
