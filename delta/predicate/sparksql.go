package predicate

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// Limits of ParseSpark: a longer text or a deeper nesting is refused before
// it is parsed (predicates come from commit metadata and from requests).
const (
	MaxSparkPredicateLen   = 64 << 10
	maxSparkPredicateDepth = 200
)

// ErrSparkSyntax is wrapped by ParseSpark when the text is not a boolean
// expression it can read.
var ErrSparkSyntax = errors.New("unreadable predicate")

// Resolver maps a column reference of a predicate text (its dotted parts,
// qualifiers included, Spark's #exprId suffix removed) to a column of the
// table; ok=false when the table has no such column.
type Resolver func(parts []string) (col Column, ok bool)

// Parsed is a predicate text read by ParseSpark.
type Parsed struct {
	// Expr holds every row the text's predicate holds: equal to it when
	// Exact, else a superset in which the parts that cannot be expressed
	// (arithmetic, functions, unknown columns) are TRUE. EvalRow and
	// MayMatch on it therefore never prune a row or file the predicate
	// would have read.
	Expr Expr
	// Exact reports that Expr is the predicate itself.
	Exact bool
	// Filters are the columns compared with literals (or tested for null),
	// in first-use order: the columns a layout on them could prune for.
	Filters []Column
	// Joins are the columns compared with another column (a MERGE's
	// condition `t.id = s.id`), in first-use order.
	Joins []Column
}

// ParseSpark reads a boolean expression as Spark writes it into
// commitInfo.operationParameters (`(id#478L < 5)`,
// "((`id` % CAST(2 AS BIGINT)) = CAST(0 AS BIGINT))", `(oldData.id =
// newData.id)`) or as a person writes a SQL WHERE clause (`a BETWEEN 1 AND
// 5 AND b IN ('x', 'y')`). Literals are typed by the column they are
// compared with; a bare word compared with a string column is a string
// (Spark's toString form leaves string literals unquoted). Casts that keep
// order (a column widened, a literal cast) are looked through.
func ParseSpark(text string, resolve Resolver) (*Parsed, error) {
	if len(text) > MaxSparkPredicateLen {
		return nil, fmt.Errorf("%w: %d bytes, over %d", ErrSparkSyntax, len(text), MaxSparkPredicateLen)
	}
	toks, err := lexSpark(text)
	if err != nil {
		return nil, err
	}
	p := &sparkParser{toks: toks}
	n, err := p.parseOr(0)
	if err != nil {
		return nil, err
	}
	if !p.at(tEOF) {
		return nil, fmt.Errorf("%w: unexpected %q at offset %d", ErrSparkSyntax, p.peek().text, p.peek().pos)
	}
	c := &sparkConv{resolve: resolve, seen: map[string]bool{}, seenJoin: map[string]bool{}}
	e, exact := c.conv(n)
	return &Parsed{Expr: e, Exact: exact, Filters: c.filters, Joins: c.joins}, nil
}

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tQuoted // back-quoted identifier
	tNumber
	tString
	tOp
	tLParen
	tRParen
	tComma
	tDot
)

type sparkTok struct {
	kind tokKind
	text string
	pos  int
}

func lexSpark(s string) ([]sparkTok, error) {
	var out []sparkTok
	i := 0
	for i < len(s) {
		c := rune(s[i])
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '(':
			out = append(out, sparkTok{tLParen, "(", i})
			i++
		case c == ')':
			out = append(out, sparkTok{tRParen, ")", i})
			i++
		case c == ',':
			out = append(out, sparkTok{tComma, ",", i})
			i++
		case c == '.' && !(i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9'):
			out = append(out, sparkTok{tDot, ".", i})
			i++
		case c == '`':
			var b strings.Builder
			j := i + 1
			for ; j < len(s); j++ {
				if s[j] == '`' {
					if j+1 < len(s) && s[j+1] == '`' {
						b.WriteByte('`')
						j++
						continue
					}
					break
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, fmt.Errorf("%w: unterminated quoted name at offset %d", ErrSparkSyntax, i)
			}
			out = append(out, sparkTok{tQuoted, b.String(), i})
			i = j + 1
		case c == '\'' || c == '"':
			var b strings.Builder
			j := i + 1
			for ; j < len(s); j++ {
				if s[j] == '\\' && j+1 < len(s) {
					b.WriteByte(s[j+1])
					j++
					continue
				}
				if s[j] == byte(c) {
					if j+1 < len(s) && s[j+1] == byte(c) {
						b.WriteByte(byte(c))
						j++
						continue
					}
					break
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, fmt.Errorf("%w: unterminated string at offset %d", ErrSparkSyntax, i)
			}
			out = append(out, sparkTok{tString, b.String(), i})
			i = j + 1
		case c >= '0' && c <= '9' || c == '.':
			j := i
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == 'e' || s[j] == 'E' ||
				(s[j] == '-' || s[j] == '+') && j > i && (s[j-1] == 'e' || s[j-1] == 'E')) {
				j++
			}
			// Spark's typed literal suffixes: 5L, 2S, 1Y, 1.5D, 1.0BD, 1.5F.
			num := s[i:j]
			for _, suf := range []string{"BD", "bd", "L", "l", "S", "s", "Y", "y", "D", "d", "F", "f"} {
				if strings.HasPrefix(s[j:], suf) && (j+len(suf) == len(s) || !isIdentChar(s[j+len(suf)])) {
					j += len(suf)
					break
				}
			}
			out = append(out, sparkTok{tNumber, num, i})
			i = j
		case isIdentStart(s[i]):
			j := i
			for j < len(s) && isIdentChar(s[j]) {
				j++
			}
			out = append(out, sparkTok{tIdent, s[i:j], i})
			i = j
		case c == '#':
			// Spark's expression id after a name (`id#478L`): dropped.
			j := i + 1
			for j < len(s) && isIdentChar(s[j]) {
				j++
			}
			i = j
		default:
			for _, op := range []string{"<=>", "<=", ">=", "!=", "<>", "==", "=", "<", ">", "+", "-", "*", "/", "%", "&&", "||", "!"} {
				if strings.HasPrefix(s[i:], op) {
					out = append(out, sparkTok{tOp, op, i})
					i += len(op)
					goto next
				}
			}
			return nil, fmt.Errorf("%w: unexpected %q at offset %d", ErrSparkSyntax, s[i], i)
		next:
		}
	}
	return append(out, sparkTok{tEOF, "", len(s)}), nil
}

func isIdentStart(b byte) bool {
	return b == '_' || b == '$' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
}

func isIdentChar(b byte) bool { return isIdentStart(b) || b >= '0' && b <= '9' }

// The syntax tree ParseSpark builds before it types anything.
type (
	sNode interface{ sNode() }
	// sRef is a column reference (dotted parts).
	sRef struct{ parts []string }
	// sLit is a literal: kind "num", "str", "bool", "null", "date",
	// "timestamp"; bare is a string that was a bare word.
	sLit struct {
		kind, text string
		bare       bool
	}
	sCast struct {
		x  sNode
		to string
	}
	sCall struct {
		name string
		args []sNode
	}
	sBin struct {
		op   string // comparison, arithmetic, AND, OR
		l, r sNode
	}
	sNot   struct{ x sNode }
	sInLst struct {
		x    sNode
		list []sNode
		neg  bool
	}
	sIsNull struct {
		x   sNode
		neg bool
	}
	// sLike is `x [NOT] LIKE pattern` (op "like"), ILIKE or RLIKE.
	sLike struct {
		op         string
		x, pattern sNode
		neg        bool
	}
)

func (sRef) sNode()    {}
func (sLit) sNode()    {}
func (sCast) sNode()   {}
func (sCall) sNode()   {}
func (sBin) sNode()    {}
func (sNot) sNode()    {}
func (sInLst) sNode()  {}
func (sIsNull) sNode() {}
func (sLike) sNode()   {}

type sparkParser struct {
	toks []sparkTok
	i    int
}

func (p *sparkParser) peek() sparkTok { return p.toks[p.i] }
func (p *sparkParser) at(k tokKind) bool {
	return p.toks[p.i].kind == k
}
func (p *sparkParser) next() sparkTok {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

// word reports whether the next token is the keyword w (case-insensitive).
func (p *sparkParser) word(w string) bool {
	t := p.peek()
	return t.kind == tIdent && strings.EqualFold(t.text, w)
}

func (p *sparkParser) wordAt(off int, w string) bool {
	if p.i+off >= len(p.toks) {
		return false
	}
	t := p.toks[p.i+off]
	return t.kind == tIdent && strings.EqualFold(t.text, w)
}

func (p *sparkParser) fail(what string) error {
	t := p.peek()
	if t.kind == tEOF {
		return fmt.Errorf("%w: %s, found the end", ErrSparkSyntax, what)
	}
	return fmt.Errorf("%w: %s, found %q at offset %d", ErrSparkSyntax, what, t.text, t.pos)
}

func (p *sparkParser) depth(d int) error {
	if d > maxSparkPredicateDepth {
		return fmt.Errorf("%w: nested deeper than %d", ErrSparkSyntax, maxSparkPredicateDepth)
	}
	return nil
}

func (p *sparkParser) parseOr(d int) (sNode, error) {
	if err := p.depth(d); err != nil {
		return nil, err
	}
	l, err := p.parseAnd(d + 1)
	if err != nil {
		return nil, err
	}
	for p.word("OR") || p.peek().kind == tOp && p.peek().text == "||" {
		p.next()
		r, err := p.parseAnd(d + 1)
		if err != nil {
			return nil, err
		}
		l = sBin{op: "OR", l: l, r: r}
	}
	return l, nil
}

func (p *sparkParser) parseAnd(d int) (sNode, error) {
	l, err := p.parseNot(d + 1)
	if err != nil {
		return nil, err
	}
	for p.word("AND") || p.peek().kind == tOp && p.peek().text == "&&" {
		p.next()
		r, err := p.parseNot(d + 1)
		if err != nil {
			return nil, err
		}
		l = sBin{op: "AND", l: l, r: r}
	}
	return l, nil
}

func (p *sparkParser) parseNot(d int) (sNode, error) {
	if err := p.depth(d); err != nil {
		return nil, err
	}
	if p.word("NOT") || p.peek().kind == tOp && p.peek().text == "!" {
		p.next()
		x, err := p.parseNot(d + 1)
		if err != nil {
			return nil, err
		}
		return sNot{x: x}, nil
	}
	return p.parsePredicate(d + 1)
}

var sparkCmpOps = map[string]string{"=": "=", "==": "=", "<=>": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

// parsePredicate reads `x op y`, `x [NOT] IN (...)`, `x [NOT] BETWEEN a
// AND b`, `x IS [NOT] NULL` or a bare operand (a boolean column, a call).
func (p *sparkParser) parsePredicate(d int) (sNode, error) {
	x, err := p.parseAdd(d + 1)
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		switch {
		case t.kind == tOp && sparkCmpOps[t.text] != "":
			p.next()
			y, err := p.parseAdd(d + 1)
			if err != nil {
				return nil, err
			}
			x = sBin{op: sparkCmpOps[t.text], l: x, r: y}
			continue
		case p.word("IS"):
			p.next()
			neg := false
			if p.word("NOT") {
				p.next()
				neg = true
			}
			if !p.word("NULL") {
				return nil, p.fail("want NULL after IS")
			}
			p.next()
			x = sIsNull{x: x, neg: neg}
			continue
		case p.word("IN"), p.word("NOT") && p.wordAt(1, "IN"):
			neg := p.word("NOT")
			if neg {
				p.next()
			}
			p.next()
			if !p.at(tLParen) {
				return nil, p.fail("want ( after IN")
			}
			p.next()
			var list []sNode
			for !p.at(tRParen) {
				v, err := p.parseAdd(d + 1)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
				if p.at(tComma) {
					p.next()
					continue
				}
				if !p.at(tRParen) {
					return nil, p.fail("want , or ) in IN list")
				}
			}
			p.next()
			x = sInLst{x: x, list: list, neg: neg}
			continue
		case p.word("LIKE"), p.word("ILIKE"), p.word("RLIKE"),
			p.word("NOT") && (p.wordAt(1, "LIKE") || p.wordAt(1, "ILIKE") || p.wordAt(1, "RLIKE")):
			neg := p.word("NOT")
			if neg {
				p.next()
			}
			op := strings.ToLower(p.next().text)
			pat, err := p.parseAdd(d + 1)
			if err != nil {
				return nil, err
			}
			if p.word("ESCAPE") {
				p.next()
				if !p.at(tString) {
					return nil, p.fail("want a string after ESCAPE")
				}
				p.next()
				op = "like-escaped"
			}
			x = sLike{op: op, x: x, pattern: pat, neg: neg}
			continue
		case p.word("BETWEEN"), p.word("NOT") && p.wordAt(1, "BETWEEN"):
			neg := p.word("NOT")
			if neg {
				p.next()
			}
			p.next()
			lo, err := p.parseAdd(d + 1)
			if err != nil {
				return nil, err
			}
			if !p.word("AND") {
				return nil, p.fail("want AND in BETWEEN")
			}
			p.next()
			hi, err := p.parseAdd(d + 1)
			if err != nil {
				return nil, err
			}
			var b sNode = sBin{op: "AND", l: sBin{op: ">=", l: x, r: lo}, r: sBin{op: "<=", l: x, r: hi}}
			if neg {
				b = sNot{x: b}
			}
			x = b
			continue
		}
		return x, nil
	}
}

func (p *sparkParser) parseAdd(d int) (sNode, error) {
	if err := p.depth(d); err != nil {
		return nil, err
	}
	l, err := p.parseUnary(d + 1)
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != tOp || !strings.Contains("+-*/%", t.text) || len(t.text) != 1 {
			return l, nil
		}
		p.next()
		r, err := p.parseUnary(d + 1)
		if err != nil {
			return nil, err
		}
		l = sBin{op: t.text, l: l, r: r}
	}
}

func (p *sparkParser) parseUnary(d int) (sNode, error) {
	if err := p.depth(d); err != nil {
		return nil, err
	}
	t := p.peek()
	if t.kind == tOp && t.text == "-" {
		p.next()
		if p.at(tNumber) {
			n := p.next()
			return sLit{kind: "num", text: "-" + n.text}, nil
		}
		x, err := p.parseUnary(d + 1)
		if err != nil {
			return nil, err
		}
		return sCall{name: "negative", args: []sNode{x}}, nil
	}
	return p.parsePrimary(d + 1)
}

func (p *sparkParser) parsePrimary(d int) (sNode, error) {
	t := p.peek()
	switch t.kind {
	case tLParen:
		p.next()
		x, err := p.parseOr(d + 1)
		if err != nil {
			return nil, err
		}
		if !p.at(tRParen) {
			return nil, p.fail("want )")
		}
		p.next()
		return x, nil
	case tNumber:
		p.next()
		return sLit{kind: "num", text: t.text}, nil
	case tString:
		p.next()
		return sLit{kind: "str", text: t.text}, nil
	case tQuoted:
		return p.parseRef()
	case tIdent:
		up := strings.ToUpper(t.text)
		switch {
		case up == "TRUE" || up == "FALSE":
			p.next()
			return sLit{kind: "bool", text: strings.ToLower(t.text)}, nil
		case up == "NULL":
			p.next()
			return sLit{kind: "null"}, nil
		case (up == "DATE" || up == "TIMESTAMP" || up == "TIMESTAMP_NTZ" || up == "TIMESTAMP_LTZ") && p.i+1 < len(p.toks) && p.toks[p.i+1].kind == tString:
			p.next()
			s := p.next()
			kind := "timestamp"
			if up == "DATE" {
				kind = "date"
			}
			return sLit{kind: kind, text: s.text}, nil
		case up == "CAST" && p.i+1 < len(p.toks) && p.toks[p.i+1].kind == tLParen:
			p.next()
			p.next()
			x, err := p.parseOr(d + 1)
			if err != nil {
				return nil, err
			}
			if !p.word("AS") {
				return nil, p.fail("want AS in CAST")
			}
			p.next()
			var typ strings.Builder
			for depth := 0; !(depth == 0 && p.at(tRParen)); {
				if p.at(tEOF) {
					return nil, p.fail("want ) after CAST type")
				}
				tk := p.next()
				switch tk.kind {
				case tLParen:
					depth++
				case tRParen:
					depth--
				}
				typ.WriteString(strings.ToLower(tk.text))
			}
			p.next()
			return sCast{x: x, to: typ.String()}, nil
		case p.i+1 < len(p.toks) && p.toks[p.i+1].kind == tLParen:
			p.next()
			p.next()
			var args []sNode
			for !p.at(tRParen) {
				a, err := p.parseOr(d + 1)
				if err != nil {
					return nil, err
				}
				args = append(args, a)
				if p.at(tComma) {
					p.next()
					continue
				}
				if !p.at(tRParen) {
					return nil, p.fail("want , or ) in call")
				}
			}
			p.next()
			return sCall{name: strings.ToLower(t.text), args: args}, nil
		}
		return p.parseRef()
	}
	return nil, p.fail("want an operand")
}

func (p *sparkParser) parseRef() (sNode, error) {
	parts := []string{p.next().text}
	for p.at(tDot) && p.i+1 < len(p.toks) && (p.toks[p.i+1].kind == tIdent || p.toks[p.i+1].kind == tQuoted) {
		p.next()
		parts = append(parts, p.next().text)
	}
	return sRef{parts: parts}, nil
}
