package delta

// Loading a snapshot checks the stats string of every file it reads
// (checkAddStats): a million files are a few hundred megabytes of JSON.
// quickScanStats checks the stats engines write (compact JSON, strings
// without escapes, shallow nesting, a plain integer numRecords) in one
// flat loop, and leaves everything else, errors included, to the full
// scan, whose errors say what is wrong and where.

// quickDepth bounds the nesting quickScanStats follows; deeper stats go to
// the full scan (which refuses them past maxStatsDepth).
const quickDepth = 48

// plainStr marks the bytes a string may hold without a closer look:
// everything but the quote, the backslash and the control characters.
// plainKey is plainStr without the bytes past ASCII: a top-level key
// with one is read by the full scan (which replaces invalid UTF-8 as
// encoding/json does).
var plainStr, plainKey = func() (str, key [256]bool) {
	for c := 0x20; c < 256; c++ {
		str[c] = c != '"' && c != '\\'
		key[c] = str[c] && c < 0x80
	}
	return str, key
}()

// quickScanStats returns what scanStats(s, true) returns when s parses
// (numRecords and whether s has one). decided is false when it cannot
// tell without the full scan: s is then checked by scanStats, which
// either accepts it or says why not. It never accepts a string that
// ParseStats refuses (TestScanStatsAgreesWithParseStats, FuzzScanStats).
func quickScanStats(s string) (n int64, has, decided bool) {
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
			switch key {
			case "numRecords":
				if null {
					break // absent, as in the full scan
				}
				v, end, ok := quickInt(s, i)
				if !ok {
					return 0, false, false
				}
				n, has, i = v, true, end
				goto next
			case "tightBounds":
				if !null && !(len(s)-i >= 4 && s[i:i+4] == "true") && !(len(s)-i >= 5 && s[i:i+5] == "false") {
					return 0, false, false
				}
			case "minValues", "maxValues", "nullCount":
				if !null && s[i] != '{' {
					return 0, false, false
				}
			default:
				if canonicalStatsKey(key) != key {
					return 0, false, false // a known key spelt in another case
				}
			}
			if i, ok = quickValue(s, i); !ok {
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

// quickKey reads an object key at s[i] (its bytes all plain), the colon
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

// quickRun returns the end of the run of plain bytes from j (plainStr,
// or plainKey with noHigh). Reading eight bytes at a time measured slower:
// stats strings are short.
func quickRun(s string, j int, noHigh bool) int {
	plain := &plainStr
	if noHigh {
		plain = &plainKey
	}
	for j < len(s) && plain[s[j]] {
		j++
	}
	return j
}

// quickValue skips one JSON value at s[i], nested objects and arrays
// included, and returns where it ends.
func quickValue(s string, i int) (int, bool) {
	var objects uint64 // bit d: the container at depth d+1 is an object
	depth := 0
	var ok bool
	for {
		// A value starts at s[i].
		if i >= len(s) {
			return 0, false
		}
		switch c := s[i]; {
		case c == '"':
			j := quickRun(s, i+1, false)
			if j >= len(s) || s[j] != '"' {
				return 0, false
			}
			i = j + 1
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
		case c == '-' || c >= '0' && c <= '9':
			if i, ok = quickNumber(s, i); !ok {
				return 0, false
			}
		case c == 't' && len(s)-i >= 4 && s[i:i+4] == "true", c == 'n' && len(s)-i >= 4 && s[i:i+4] == "null":
			i += 4
		case c == 'f' && len(s)-i >= 5 && s[i:i+5] == "false":
			i += 5
		default:
			return 0, false
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
