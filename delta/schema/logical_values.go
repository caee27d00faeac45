package schema

import (
	"encoding/base64"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"
	"unicode/utf8"
)

// Date is a date as days since 1970-01-01.
type Date int32

// String formats the date as yyyy-MM-dd.
func (d Date) String() string {
	return time.Unix(int64(d)*86400, 0).UTC().Format("2006-01-02")
}

// Timestamp is an instant in microseconds since the epoch (UTC).
type Timestamp int64

// String formats the instant as RFC 3339 with microseconds, in UTC.
func (t Timestamp) String() string {
	return microsTime(int64(t)).Format("2006-01-02T15:04:05.000000Z")
}

// TimestampNTZ is a wall-clock date-time without zone, in microseconds
// since 1970-01-01T00:00:00.
type TimestampNTZ int64

// String formats the date-time as yyyy-MM-ddTHH:mm:ss.ffffff.
func (t TimestampNTZ) String() string {
	return microsTime(int64(t)).Format("2006-01-02T15:04:05.000000")
}

func microsTime(us int64) time.Time {
	return time.Unix(FloorDiv(us, 1_000_000), (us-FloorDiv(us, 1_000_000)*1_000_000)*1000).UTC()
}

// Decimal is an exact decimal: Unscaled * 10^-Scale.
type Decimal struct {
	Unscaled *big.Int
	Scale    int
}

// String renders the decimal with exactly Scale fractional digits.
func (d Decimal) String() string {
	s := new(big.Int).Abs(d.Unscaled).String()
	neg := d.Unscaled.Sign() < 0
	if d.Scale > 0 {
		for len(s) <= d.Scale {
			s = "0" + s
		}
		s = s[:len(s)-d.Scale] + "." + s[len(s)-d.Scale:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// LogicalStruct is a struct value with its logical field names, in schema
// order.
type LogicalStruct struct {
	Names  []string
	Values []any
}

// Get returns the value of the named field and whether it exists.
func (s *LogicalStruct) Get(name string) (any, bool) {
	for i, n := range s.Names {
		if n == name {
			return s.Values[i], true
		}
	}
	return nil, false
}

// LogicalMap is a map value, entries in file order.
type LogicalMap struct {
	Keys   []any
	Values []any
}

// AppendJSON appends the JSON form of a logical value: dates "yyyy-MM-dd",
// timestamps RFC 3339 with microseconds in UTC, timestamp_ntz without zone,
// decimals as exact JSON numbers, binary as base64, NaN and infinities as
// the strings "NaN", "Infinity", "-Infinity", structs as objects in schema
// order, maps with string keys as objects, other maps as
// [{"key":k,"value":v},...].
func AppendJSON(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float32:
		return appendFloat(b, float64(x), 32)
	case float64:
		return appendFloat(b, x, 64)
	case string:
		return AppendJSONString(b, x)
	case []byte:
		return AppendJSONString(b, base64.StdEncoding.EncodeToString(x))
	case Date, Timestamp, TimestampNTZ:
		return AppendJSONString(b, x.(fmt.Stringer).String())
	case Decimal:
		return append(b, x.String()...)
	case *LogicalStruct:
		b = append(b, '{')
		for i, n := range x.Names {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSONString(b, n)
			b = append(b, ':')
			b = AppendJSON(b, x.Values[i])
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSON(b, e)
		}
		return append(b, ']')
	case *LogicalMap:
		stringKeys := true
		for _, k := range x.Keys {
			if _, ok := k.(string); !ok {
				stringKeys = false
				break
			}
		}
		if stringKeys {
			b = append(b, '{')
			for i, k := range x.Keys {
				if i > 0 {
					b = append(b, ',')
				}
				b = AppendJSONString(b, k.(string))
				b = append(b, ':')
				b = AppendJSON(b, x.Values[i])
			}
			return append(b, '}')
		}
		b = append(b, '[')
		for i, k := range x.Keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"key":`...)
			b = AppendJSON(b, k)
			b = append(b, `,"value":`...)
			b = AppendJSON(b, x.Values[i])
			b = append(b, '}')
		}
		return append(b, ']')
	}
	return AppendJSONString(b, fmt.Sprintf("%v", v))
}

func appendFloat(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits)
}

const hexDigits = "0123456789abcdef"

func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

func FloorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
