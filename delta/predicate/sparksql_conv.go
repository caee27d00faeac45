package predicate

import "strings"

// From the parsed Spark SQL tree to an Expr: columns resolved, literals
// typed, and whatever has no Expr form widened to TRUE.

// sparkConv types a syntax tree against the table's columns.
type sparkConv struct {
	resolve        Resolver
	filters, joins []Column
	seen, seenJoin map[string]bool
}

func (c *sparkConv) filter(col Column) {
	if !c.seen[col.key()] {
		c.seen[col.key()] = true
		c.filters = append(c.filters, col)
	}
}

func (c *sparkConv) join(col Column) {
	if !c.seenJoin[col.key()] {
		c.seenJoin[col.key()] = true
		c.joins = append(c.joins, col)
	}
}

// conv returns the expression of n and whether it is exact; an inexact
// one is a superset (TRUE where nothing better is known).
func (c *sparkConv) conv(n sNode) (Expr, bool) {
	switch n := n.(type) {
	case sBin:
		switch n.op {
		case "AND":
			l, le := c.conv(n.l)
			r, re := c.conv(n.r)
			return flatAnd(l, r), le && re
		case "OR":
			l, le := c.conv(n.l)
			r, re := c.conv(n.r)
			return flatOr(l, r), le && re
		}
		return c.cmp(n)
	case sNot:
		x, exact := c.conv(n.x)
		if !exact {
			return Const(true), false
		}
		return Not(x), true
	case sIsNull:
		col, ok := c.column(n.x)
		if !ok {
			return Const(true), false
		}
		c.filter(col)
		return IsNull{Col: col, Negated: n.neg}, true
	case sInLst:
		col, ok := c.column(n.x)
		if !ok {
			return Const(true), false
		}
		vals := make([]Value, 0, len(n.list))
		for _, item := range n.list {
			v, ok := c.literal(item, col.Kind)
			if !ok {
				return Const(true), false
			}
			vals = append(vals, v)
		}
		c.filter(col)
		e, err := NewIn(col, vals...)
		if err != nil {
			return Const(true), false
		}
		if n.neg {
			return Not(e), true
		}
		return e, true
	case sLike:
		return c.like(n)
	case sLit:
		if n.kind == "bool" {
			return Const(n.text == "true"), true
		}
	case sCall:
		if len(n.args) == 1 && (n.name == "isnull" || n.name == "isnotnull") {
			if col, ok := c.column(n.args[0]); ok {
				c.filter(col)
				return IsNull{Col: col, Negated: n.name == "isnotnull"}, true
			}
		}
	case sRef:
		if col, ok := c.column(n); ok && col.Kind == KindBool {
			c.filter(col)
			return Cmp{Col: col, Op: OpEq, Value: Bool(true)}, true
		}
	}
	return Const(true), false
}

var sparkOps = map[string]Op{"=": OpEq, "!=": OpNe, "<": OpLt, "<=": OpLe, ">": OpGt, ">=": OpGe}

// flipped is the operator of `b op a` for `a op b`.
func flipped(o Op) Op {
	return [...]Op{OpEq, OpNe, OpGt, OpGe, OpLt, OpLe}[o]
}

func (c *sparkConv) cmp(n sBin) (Expr, bool) {
	op, ok := sparkOps[n.op]
	if !ok {
		return Const(true), false // arithmetic as a boolean: not ours
	}
	lc, lok := c.column(n.l)
	rc, rok := c.column(n.r)
	switch {
	case lok && rok:
		c.join(lc)
		c.join(rc)
		return Const(true), false
	case rok:
		lc, n.l, n.r, op = rc, n.r, n.l, flipped(op)
	case !lok:
		return Const(true), false
	}
	v, ok := c.literal(n.r, lc.Kind)
	if !ok {
		return Const(true), false
	}
	c.filter(lc)
	e, err := NewCmp(lc, op, v)
	if err != nil {
		return Const(true), false
	}
	return e, true
}

// column resolves n as a column, through order-keeping casts.
func (c *sparkConv) column(n sNode) (Column, bool) {
	switch n := n.(type) {
	case sRef:
		if col, ok := c.resolve(n.parts); ok && col.Kind != KindInvalid {
			return col, true
		}
	case sCast:
		col, ok := c.column(n.x)
		if ok && castKeepsOrder(col.Kind, n.to) {
			return col, true
		}
	}
	return Column{}, false
}

// castKeepsOrder reports whether casting a value of kind k to the type
// named to keeps the order of values, so a comparison of the cast column
// prunes as one of the column.
func castKeepsOrder(k Kind, to string) bool {
	switch k {
	case KindInt:
		return to == "bigint" || to == "long" || to == "int" || to == "integer" || to == "double" || to == "float" || strings.HasPrefix(to, "decimal")
	case KindFloat:
		return to == "double"
	case KindDate:
		return to == "date"
	case KindTimestamp:
		return to == "timestamp"
	case KindString:
		return to == "string"
	}
	return false
}

// literal types n as a literal of kind k.
func (c *sparkConv) literal(n sNode, k Kind) (Value, bool) {
	switch n := n.(type) {
	case sCast:
		return c.literal(n.x, k)
	case sRef:
		// Spark's toString form of a string literal is the bare text.
		if k == KindString && len(n.parts) == 1 {
			if _, isCol := c.resolve(n.parts); !isCol {
				return String(n.parts[0]), true
			}
		}
		return Value{}, false
	case sLit:
		switch n.kind {
		case "null":
			return Value{}, false
		case "bool":
			if k != KindBool {
				return Value{}, false
			}
		case "num":
			if k == KindString || k == KindBool || k == KindDate || k == KindTimestamp {
				return Value{}, false
			}
			if k == KindInt && strings.ContainsAny(n.text, ".eE") {
				return Value{}, false
			}
		}
		v, err := ParseLiteral(k, n.text)
		if err != nil {
			return Value{}, false
		}
		return v, true
	}
	return Value{}, false
}

func flatAnd(l, r Expr) Expr {
	var out And
	for _, e := range []Expr{l, r} {
		switch e := e.(type) {
		case And:
			out = append(out, e...)
		case Const:
			if !e {
				return Const(false)
			}
		default:
			out = append(out, e)
		}
	}
	switch len(out) {
	case 0:
		return Const(true)
	case 1:
		return out[0]
	}
	return out
}

func flatOr(l, r Expr) Expr {
	var out Or
	for _, e := range []Expr{l, r} {
		switch e := e.(type) {
		case Or:
			out = append(out, e...)
		case Const:
			if e {
				return Const(true)
			}
		default:
			out = append(out, e)
		}
	}
	switch len(out) {
	case 0:
		return Const(false)
	case 1:
		return out[0]
	}
	return out
}

// like turns `col LIKE 'prefix%...'` into the prefix's range, a superset
// of the rows the pattern holds (exact=false); other patterns, ILIKE,
// RLIKE and NOT LIKE hold any row.
func (c *sparkConv) like(n sLike) (Expr, bool) {
	col, ok := c.column(n.x)
	lit, isLit := n.pattern.(sLit)
	if !ok || col.Kind != KindString || n.op != "like" || n.neg || !isLit || lit.kind != "str" {
		return Const(true), false
	}
	prefix := lit.text
	if i := strings.IndexAny(prefix, "%_\\"); i >= 0 {
		prefix = prefix[:i]
	}
	c.filter(col)
	if prefix == "" {
		return IsNull{Col: col, Negated: true}, false
	}
	ge := Cmp{Col: col, Op: OpGe, Value: String(prefix)}
	// The least string above every string with the prefix: the prefix with
	// its last byte below 0xff incremented (nothing is above all of 0xff...).
	b := []byte(prefix)
	for len(b) > 0 && b[len(b)-1] == 0xff {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return ge, false
	}
	b[len(b)-1]++
	return And{ge, Cmp{Col: col, Op: OpLt, Value: String(string(b))}}, false
}
