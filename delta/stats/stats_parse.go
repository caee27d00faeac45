package stats

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ParseStats parses an add.stats JSON string. Numbers are kept as
// json.Number so that longs and decimals keep their exact text; dates,
// timestamps and strings stay strings; nested structs are nested maps. An
// empty string or a JSON null yields (nil, nil): missing stats mean
// "unknown", never "empty".
//
// Planning and data skipping parse the stats of many files, so this is a small
// dedicated JSON parser: keys, numbers and escape-free strings share the
// memory of s instead of being copied.
func ParseStats(s string) (*Stats, error) {
	if s == "" {
		return nil, nil
	}
	p := statsParser{s: s}
	var st Stats
	null, err := p.object(func(key string) (bool, error) { return false, p.field(&st, key) })
	if err != nil || null {
		return nil, err
	}
	return &st, nil
}

// ScanStats reads the top-level numRecords of a stats JSON string without
// building any value. With validate it checks the whole string as
// ParseStats would (same errors for the same input), else it stops at
// numRecords.
func ScanStats(s string, validate bool) (n int64, ok bool, err error) {
	if validate {
		if n, ok, decided := QuickScanStats(s); decided {
			return n, ok, nil
		}
	}
	return FullScanStats(s, validate)
}

// FullScanStats is scanStats without the quick check for the common
// shapes: every input, every error.
func FullScanStats(s string, validate bool) (n int64, ok bool, err error) {
	if s == "" {
		return 0, false, nil
	}
	p := statsParser{s: s}
	_, err = p.object(func(key string) (bool, error) {
		start := p.i
		if err := p.skip(0); err != nil {
			return false, err
		}
		raw := p.s[start:p.i]
		key = canonicalStatsKey(key)
		switch {
		case raw == "null":
			// null is "absent" for every statistic.
		case key == "numRecords":
			// A repeated key wins, as in ParseStats.
			if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
				return false, p.fail("numRecords is not a number")
			}
			v, err := strconv.ParseInt(raw, 10, 64)
			if err != nil {
				return false, p.fail("numRecords: " + err.Error())
			}
			n, ok = v, true
			return !validate, nil
		case !validate:
		case key == "tightBounds":
			if raw != "true" && raw != "false" {
				return false, p.fail("tightBounds is not a boolean")
			}
		case key == "minValues", key == "maxValues", key == "nullCount":
			if raw[0] != '{' {
				return false, p.fail(key + " is not an object")
			}
		}
		return false, nil
	})
	if err != nil {
		return 0, false, err
	}
	return n, ok, nil
}

// object reads the top-level stats object of p.s: a JSON null (null is
// true) is no statistics; field reads each key's value and may stop the
// read early (the rest of the string is then not checked).
func (p *statsParser) object(field func(key string) (stop bool, err error)) (null bool, err error) {
	p.ws()
	if strings.HasPrefix(p.s[p.i:], "null") {
		// A JSON null is "no statistics", like an absent stats field.
		p.i += 4
		p.ws()
		if p.i != len(p.s) {
			return false, p.fail("trailing data after null")
		}
		return true, nil
	}
	if !p.eat('{') {
		return false, p.fail("want an object")
	}
	p.ws()
	if !p.eat('}') {
		for {
			key, err := p.str()
			if err != nil {
				return false, err
			}
			p.ws()
			if !p.eat(':') {
				return false, p.fail("want ':'")
			}
			p.ws()
			if stop, err := field(key); err != nil || stop {
				return false, err
			}
			p.ws()
			if p.eat(',') {
				p.ws()
				continue
			}
			if p.eat('}') {
				break
			}
			return false, p.fail("want ',' or '}'")
		}
	}
	p.ws()
	if p.i != len(p.s) {
		return false, p.fail("trailing data after the stats object")
	}
	return false, nil
}

type statsParser struct {
	s string
	i int
}

func (p *statsParser) fail(msg string) error {
	return fmt.Errorf("parse stats: offset %d: %s", p.i, msg)
}

// ws skips whitespace (quickWS, the quick check's).
func (p *statsParser) ws() { p.i = quickWS(p.s, p.i) }

func (p *statsParser) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *statsParser) field(st *Stats, key string) error {
	switch key = canonicalStatsKey(key); key {
	case "numRecords":
		v, err := p.value(0)
		if err != nil {
			return err
		}
		if v == nil {
			return nil
		}
		num, ok := v.(json.Number)
		if !ok {
			return p.fail("numRecords is not a number")
		}
		n, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil {
			return p.fail("numRecords: " + err.Error())
		}
		st.NumRecords = &n
	case "tightBounds":
		v, err := p.value(0)
		if err != nil {
			return err
		}
		if v == nil {
			return nil
		}
		b, ok := v.(bool)
		if !ok {
			return p.fail("tightBounds is not a boolean")
		}
		st.TightBounds = &b
	case "minValues", "maxValues", "nullCount":
		v, err := p.value(0)
		if err != nil {
			return err
		}
		if v == nil {
			return nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			return p.fail(key + " is not an object")
		}
		dst := &st.NullCount
		switch key {
		case "minValues":
			dst = &st.MinValues
		case "maxValues":
			dst = &st.MaxValues
		}
		if *dst == nil {
			*dst = m
		} else {
			// A repeated key merges, as encoding/json does for map fields.
			for k, v := range m {
				(*dst)[k] = v
			}
		}
	default:
		// Unknown statistics are skipped (validated, not kept).
		if err := p.skip(0); err != nil {
			return err
		}
	}
	return nil
}

const maxStatsDepth = 64

// canonicalStatsKey maps a stats field name to its canonical spelling
// (field names match case-insensitively, as with encoding/json).
func canonicalStatsKey(key string) string {
	switch key {
	case "numRecords", "tightBounds", "minValues", "maxValues", "nullCount":
		return key // writers spell them so: no case folding
	}
	for _, k := range [...]string{"numRecords", "tightBounds", "minValues", "maxValues", "nullCount"} {
		if key != k && strings.EqualFold(key, k) {
			return k
		}
	}
	return key
}

// skip checks one JSON value as value would parse it, building nothing.
func (p *statsParser) skip(depth int) error {
	if depth > maxStatsDepth {
		return p.fail("nesting too deep")
	}
	if p.i >= len(p.s) {
		return p.fail("unexpected end")
	}
	switch c := p.s[p.i]; {
	case c == '{', c == '[':
		end, obj := byte(']'), c == '{'
		if obj {
			end = '}'
		}
		p.i++
		p.ws()
		if p.eat(end) {
			return nil
		}
		for {
			p.ws()
			if obj {
				if err := p.skipStr(); err != nil {
					return err
				}
				p.ws()
				if !p.eat(':') {
					return p.fail("want ':'")
				}
				p.ws()
			}
			if err := p.skip(depth + 1); err != nil {
				return err
			}
			p.ws()
			if p.eat(',') {
				continue
			}
			if p.eat(end) {
				return nil
			}
			return p.fail(fmt.Sprintf("want ',' or '%c'", end))
		}
	case c == '"':
		return p.skipStr()
	case c == '-' || c >= '0' && c <= '9':
		_, err := p.number()
		return err
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if strings.HasPrefix(p.s[p.i:], lit) {
				p.i += len(lit)
				return nil
			}
		}
		return p.fail(fmt.Sprintf("unexpected character %q", c))
	}
}

// strSpecial marks the bytes a JSON string scan must look at: the closing
// quote, the escape and the control characters.
var strSpecial = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// skipStr checks a JSON string as str would read it, building nothing
// (escapes are checked as encoding/json reads them).
func (p *statsParser) skipStr() error {
	if !p.eat('"') {
		return p.fail("want a string")
	}
	for p.i < len(p.s) {
		p.skipPlain()
		if p.i >= len(p.s) {
			break
		}
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return nil
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return errors.New("parse stats: unterminated string")
			}
			switch p.s[p.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i += 2
			case 'u':
				if p.i+6 > len(p.s) {
					return errors.New("parse stats: unterminated string")
				}
				for _, h := range []byte(p.s[p.i+2 : p.i+6]) {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return p.fail("invalid escape in string")
					}
				}
				p.i += 6
			default:
				return p.fail("invalid escape in string")
			}
			continue
		case c < 0x20:
			return p.fail("control character in string")
		}
		p.i++
	}
	return p.fail("unterminated string")
}

// value parses any JSON value: objects as map[string]any, arrays as
// []any, numbers as json.Number, strings, booleans and nil.
func (p *statsParser) value(depth int) (any, error) {
	if depth > maxStatsDepth {
		return nil, p.fail("nesting too deep")
	}
	if p.i >= len(p.s) {
		return nil, p.fail("unexpected end")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		p.i++
		m := map[string]any{}
		p.ws()
		if p.eat('}') {
			return m, nil
		}
		for {
			p.ws()
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			p.ws()
			if !p.eat(':') {
				return nil, p.fail("want ':'")
			}
			p.ws()
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			m[k] = v
			p.ws()
			if p.eat(',') {
				continue
			}
			if p.eat('}') {
				return m, nil
			}
			return nil, p.fail("want ',' or '}'")
		}
	case c == '[':
		p.i++
		var a []any
		p.ws()
		if p.eat(']') {
			return []any{}, nil
		}
		for {
			p.ws()
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
			p.ws()
			if p.eat(',') {
				continue
			}
			if p.eat(']') {
				return a, nil
			}
			return nil, p.fail("want ',' or ']'")
		}
	case c == '"':
		return p.str()
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	default:
		for _, lit := range []struct {
			text string
			v    any
		}{{"true", true}, {"false", false}, {"null", nil}} {
			if len(p.s)-p.i >= len(lit.text) && p.s[p.i:p.i+len(lit.text)] == lit.text {
				p.i += len(lit.text)
				return lit.v, nil
			}
		}
		return nil, p.fail(fmt.Sprintf("unexpected character %q", c))
	}
}

// number scans a JSON number per RFC 8259 (quickNumber, the quick
// check's); a malformed one fails at its start.
func (p *statsParser) number() (json.Number, error) {
	start := p.i
	end, ok := quickNumber(p.s, p.i)
	if !ok {
		return "", p.fail("malformed number")
	}
	p.i = end
	return json.Number(p.s[start:end]), nil
}

// skipPlain skips the string bytes that need no look (strSpecial): most
// of every string (quickRun, the quick check's).
func (p *statsParser) skipPlain() { p.i = quickRun(p.s, p.i, false) }

// str scans a JSON string; escape-free strings are substrings of the input.
func (p *statsParser) str() (string, error) {
	if !p.eat('"') {
		return "", p.fail("want a string")
	}
	start := p.i
	p.skipPlain()
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			out := p.s[start:p.i]
			p.i++
			if !utf8.ValidString(out) {
				// encoding/json semantics: invalid bytes become U+FFFD.
				var fixed string
				if err := json.Unmarshal([]byte(p.s[start-1:p.i]), &fixed); err != nil {
					return "", p.fail(err.Error())
				}
				return fixed, nil
			}
			return out, nil
		case c == '\\':
			return p.escapedStr(start)
		case c < 0x20:
			return "", p.fail("control character in string")
		}
		p.i++
	}
	return "", p.fail("unterminated string")
}

// escapedStr finishes a string with escapes via encoding/json.
func (p *statsParser) escapedStr(start int) (string, error) {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case '\\':
			p.i += 2
			continue
		case '"':
			var out string
			if err := json.Unmarshal([]byte(p.s[start-1:p.i+1]), &out); err != nil {
				return "", p.fail(err.Error())
			}
			p.i++
			return out, nil
		}
		p.i++
	}
	return "", errors.New("parse stats: unterminated string")
}
