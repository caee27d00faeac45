package stats

// Loading a snapshot checks the stats string of every file it reads
// (checkAddStats): a million files are a few hundred megabytes of JSON.
// QuickScanStats checks the stats engines write (compact JSON, strings
// without escapes, shallow nesting, a plain integer numRecords) in one
// flat loop, and leaves everything else, errors included, to the full
// scan, whose errors say what is wrong and where.

// quickDepth bounds the nesting quickScanStats follows; deeper stats go to
// the full scan (which refuses them past maxStatsDepth).
const quickDepth = 48

// plainKey marks the bytes a top-level key may hold without a closer
// look: those a string scan need not look at (not strSpecial) within
// ASCII. A key with a byte past ASCII is read by the full scan (which
// replaces invalid UTF-8 as encoding/json does).
var plainKey = func() (key [256]bool) {
	for c := range key {
		key[c] = !strSpecial[c] && c < 0x80
	}
	return key
}()

// QuickScanStats returns what scanStats(s, true) returns when s parses
// (numRecords and whether s has one). decided is false when it cannot
// tell without the full scan: s is then checked by scanStats, which
// either accepts it or says why not. It never accepts a string that
// ParseStats refuses (TestScanStatsAgreesWithParseStats, FuzzScanStats).
func QuickScanStats(s string) (n int64, has, decided bool) {
	return QuickScanShape(s, nil)
}

// QuickScanShape is quickScanStats that, when sh is not nil, records in
// it the shape of s (valid only when decided).
func QuickScanShape(s string, sh *StatsShape) (n int64, has, decided bool) {
	if sh != nil {
		sh.Text, sh.cuts, sh.kinds = s, sh.cuts[:0], sh.kinds[:0]
	}
	i := quickWS(s, 0)
	if i >= len(s) || s[i] != '{' {
		return 0, false, false
	}
	i = quickWS(s, i+1)
	if i < len(s) && s[i] == '}' {
		i++
	} else {
		for {
			var key string
			var ok bool
			if key, i, ok = quickKey(s, i, true); !ok || i >= len(s) {
				return 0, false, false
			}
			null := len(s)-i >= 4 && s[i:i+4] == "null"
			kind := anyScalar
			switch key {
			case "numRecords":
				if null {
					kind = nullOnly // absent, as in the full scan
					break
				}
				v, end, ok := quickInt(s, i)
				if !ok {
					return 0, false, false
				}
				sh.cut(i, end, recordsInt)
				n, has, i = v, true, end
				goto next
			case "tightBounds":
				kind = boundsBool
				if null {
					kind = nullOnly
				} else if !(len(s)-i >= 4 && s[i:i+4] == "true") && !(len(s)-i >= 5 && s[i:i+5] == "false") {
					return 0, false, false
				}
			case "minValues", "maxValues", "nullCount":
				kind = nullOnly // when null, the only scalar they may be
				if !null && s[i] != '{' {
					return 0, false, false
				}
			default:
				if canonicalStatsKey(key) != key {
					return 0, false, false // a known key spelt in another case
				}
			}
			if i, ok = quickValue(s, i, sh, kind); !ok {
				return 0, false, false
			}
		next:
			i = quickWS(s, i)
			if i >= len(s) {
				return 0, false, false
			}
			if s[i] == ',' {
				i = quickWS(s, i+1)
				continue
			}
			if s[i] != '}' {
				return 0, false, false
			}
			i++
			break
		}
	}
	if quickWS(s, i) != len(s) {
		return 0, false, false
	}
	return n, has, true
}

// quickWS skips JSON whitespace from i.
func quickWS(s string, i int) int {
	if i < len(s) && s[i] > ' ' {
		return i // compact JSON: the common case, small enough to inline
	}
	return quickWSSlow(s, i)
}

func quickWSSlow(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r') {
		i++
	}
	return i
}

// quickKey reads an object key at s[i] (its bytes all plain (quickRun)), the colon
// after it and the whitespace around, and returns the key and where its
// value starts.
func quickKey(s string, i int, noHigh bool) (key string, next int, ok bool) {
	if i >= len(s) || s[i] != '"' {
		return "", 0, false
	}
	j := quickRun(s, i+1, noHigh)
	if j >= len(s) || s[j] != '"' {
		return "", 0, false
	}
	key = s[i+1 : j]
	j = quickWS(s, j+1)
	if j >= len(s) || s[j] != ':' {
		return "", 0, false
	}
	return key, quickWS(s, j+1), true
}

// quickInt reads a JSON integer of at most 18 digits at s[i], the
// numRecords engines write; anything else (a fraction, an exponent, a
// longer number) is left to the full scan.
func quickInt(s string, i int) (v int64, next int, ok bool) {
	neg := i < len(s) && s[i] == '-'
	if neg {
		i++
	}
	start := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		v = v*10 + int64(s[i]-'0')
		i++
	}
	digits := i - start
	if digits == 0 || digits > 18 || (digits > 1 && s[start] == '0') {
		return 0, 0, false
	}
	if i < len(s) && (s[i] == '.' || s[i] == 'e' || s[i] == 'E') {
		return 0, 0, false
	}
	if neg {
		v = -v
	}
	return v, i, true
}

// quickNumber skips a JSON number at s[i] (the grammar the full scan's
// number reads).
func quickNumber(s string, i int) (int, bool) {
	if s[i] == '-' {
		i++
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if j := quickDigits(s, i); j > i {
		i = j
	} else {
		return 0, false
	}
	if i < len(s) && s[i] == '.' {
		j := quickDigits(s, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := quickDigits(s, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

// quickDigits returns the end of the decimal digits from i.
func quickDigits(s string, i int) int {
	for i < len(s) && s[i]-'0' <= 9 {
		i++
	}
	return i
}

// quickRun returns the end of the run of plain bytes from j: those a
// string scan need not look at (not strSpecial), and with noHigh within
// ASCII (plainKey). Reading eight bytes at a time measured slower: stats
// strings are short.
func quickRun(s string, j int, noHigh bool) int {
	if noHigh {
		for j < len(s) && plainKey[s[j]] {
			j++
		}
		return j
	}
	for j < len(s) && !strSpecial[s[j]] {
		j++
	}
	return j
}

// quickValue skips one JSON value at s[i], nested objects and arrays
// included, and returns where it ends.
func quickValue(s string, i int, sh *StatsShape, kind valueKind) (int, bool) {
	var objects uint64 // bit d: the container at depth d+1 is an object
	depth := 0
	var ok bool
	for {
		// A value starts at s[i].
		if i >= len(s) {
			return 0, false
		}
		switch c := s[i]; {
		case c == '{' || c == '[':
			closer := byte(']')
			if c == '{' {
				closer = '}'
			}
			i = quickWS(s, i+1)
			if i < len(s) && s[i] == closer {
				i++
				break
			}
			if depth == quickDepth {
				return 0, false
			}
			objects <<= 1
			if c == '{' {
				objects |= 1
				if _, i, ok = quickKey(s, i, false); !ok {
					return 0, false
				}
			}
			depth++
			continue
		default:
			start := i
			if i, ok = quickScalar(s, i); !ok {
				return 0, false
			}
			if depth == 0 {
				sh.cut(start, i, kind)
			} else {
				sh.cut(start, i, anyScalar)
			}
		}
		// A value ended at s[i]: close containers until one goes on.
		for {
			if depth == 0 {
				return i, true
			}
			i = quickWS(s, i)
			if i >= len(s) {
				return 0, false
			}
			object := objects&1 == 1
			if s[i] == ',' {
				i = quickWS(s, i+1)
				if object {
					if _, i, ok = quickKey(s, i, false); !ok {
						return 0, false
					}
				}
				break
			}
			if (object && s[i] != '}') || (!object && s[i] != ']') {
				return 0, false
			}
			i++
			objects >>= 1
			depth--
		}
	}
}

// quickScalar skips a JSON string (without escapes), number, true, false
// or null at s[i].
func quickScalar(s string, i int) (int, bool) {
	if i >= len(s) {
		return 0, false
	}
	switch c := s[i]; {
	case c == '"':
		j := quickRun(s, i+1, false)
		if j >= len(s) || s[j] != '"' {
			return 0, false
		}
		return j + 1, true
	case c == '-' || c >= '0' && c <= '9':
		return quickNumber(s, i)
	case c == 't' && len(s)-i >= 4 && s[i:i+4] == "true", c == 'n' && len(s)-i >= 4 && s[i:i+4] == "null":
		return i + 4, true
	case c == 'f' && len(s)-i >= 5 && s[i:i+5] == "false":
		return i + 5, true
	}
	return 0, false
}

// A statsShape is the layout of a stats string the quick check accepted:
// its bytes outside the scalar values (keys, punctuation, whitespace,
// braces) and what each value may be replaced with. The stats strings of
// one writer's files mostly share one shape, and a string of that shape is
// checked by comparing those bytes and reading its values alone (match),
// about half the work of the quick check. Replacing scalars with scalars
// keeps JSON valid, and the kinds keep what ParseStats requires of the
// top-level statistics.
type StatsShape struct {
	Text  string      // the string the shape was taken from
	cuts  []int       // s[cuts[2k]:cuts[2k+1]] is the k-th scalar
	kinds []valueKind // what may stand for the k-th scalar
}

// valueKind is what a shape's scalar may be replaced with.
type valueKind uint8

const (
	anyScalar  valueKind = iota // a string, number, true, false or null
	recordsInt                  // numRecords: an integer quickInt reads
	boundsBool                  // tightBounds: true or false
	nullOnly                    // a null top-level statistic: null again
)

// cut records s[lo:hi] as a scalar of the kind (nothing when sh is nil).
func (sh *StatsShape) cut(lo, hi int, kind valueKind) {
	if sh != nil {
		sh.cuts = append(sh.cuts, lo, hi)
		sh.kinds = append(sh.kinds, kind)
	}
}

// Match returns what quickScanStats returns for s, and ok, when s has the
// shape sh; ok is false otherwise (s may still parse).
func (sh *StatsShape) Match(s string) (n int64, has, ok bool) {
	i, prev := 0, 0
	for k, kind := range sh.kinds {
		lo, hi := sh.cuts[2*k], sh.cuts[2*k+1]
		fixed := sh.Text[prev:lo]
		if len(s)-i < len(fixed) || s[i:i+len(fixed)] != fixed {
			return 0, false, false
		}
		i += len(fixed)
		var ok bool
		switch kind {
		case anyScalar:
			i, ok = quickScalar(s, i)
		case recordsInt:
			n, i, ok = quickInt(s, i)
			has = true
		case boundsBool:
			switch {
			case len(s)-i >= 4 && s[i:i+4] == "true":
				i, ok = i+4, true
			case len(s)-i >= 5 && s[i:i+5] == "false":
				i, ok = i+5, true
			}
		case nullOnly:
			if len(s)-i >= 4 && s[i:i+4] == "null" {
				i, ok = i+4, true
			}
		}
		if !ok {
			return 0, false, false
		}
		prev = hi
	}
	if s[i:] != sh.Text[prev:] {
		return 0, false, false
	}
	return n, has, true
}
