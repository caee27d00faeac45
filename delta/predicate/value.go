package predicate

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// Kind is the comparison domain of a column or literal.
type Kind int

// The kinds a predicate can compare.
const (
	KindInvalid Kind = iota
	KindInt
	KindFloat
	KindDecimal
	KindString
	KindBool
	KindDate      // days since the Unix epoch
	KindTimestamp // microseconds since the Unix epoch (UTC; ntz as wall clock)
)

// KindOf maps a Delta primitive type name to its comparison kind. Types
// that cannot be compared (binary, nested types, void, variant) map to
// KindInvalid: predicates over them are refused when built.
func KindOf(deltaType string) Kind {
	switch {
	case deltaType == "long" || deltaType == "integer" || deltaType == "short" || deltaType == "byte":
		return KindInt
	case deltaType == "float" || deltaType == "double":
		return KindFloat
	case strings.HasPrefix(deltaType, "decimal"):
		return KindDecimal
	case deltaType == "string":
		return KindString
	case deltaType == "boolean":
		return KindBool
	case deltaType == "date":
		return KindDate
	case deltaType == "timestamp" || deltaType == "timestamp_ntz":
		return KindTimestamp
	}
	return KindInvalid
}

// Value is a typed, non-null scalar.
type Value struct {
	Kind Kind
	I    int64    // KindInt, KindDate, KindTimestamp, KindBool (0/1)
	F    float64  // KindFloat
	D    *big.Rat // KindDecimal
	S    string   // KindString
}

// Int, Float, String, Bool, Date and Timestamp build literals.
func Int(v int64) Value        { return Value{Kind: KindInt, I: v} }
func Float(v float64) Value    { return Value{Kind: KindFloat, F: v} }
func String(v string) Value    { return Value{Kind: KindString, S: v} }
func Date(days int64) Value    { return Value{Kind: KindDate, I: days} }
func Timestamp(us int64) Value { return Value{Kind: KindTimestamp, I: us} }

// Bool builds a boolean literal.
func Bool(v bool) Value {
	if v {
		return Value{Kind: KindBool, I: 1}
	}
	return Value{Kind: KindBool}
}

// Decimal builds a decimal literal from its text form.
func Decimal(text string) (Value, error) {
	r, ok := new(big.Rat).SetString(text)
	if !ok {
		return Value{}, fmt.Errorf("invalid decimal %q", text)
	}
	return Value{Kind: KindDecimal, D: r}, nil
}

// String renders the value for plans, logs and commit predicates.
func (v Value) String() string {
	switch v.Kind {
	case KindInt:
		return strconv.FormatInt(v.I, 10)
	case KindFloat:
		return strconv.FormatFloat(v.F, 'g', -1, 64)
	case KindDecimal:
		return v.D.FloatString(10)
	case KindString:
		return strconv.Quote(v.S)
	case KindBool:
		return strconv.FormatBool(v.I != 0)
	case KindDate:
		return "DATE '" + time.Unix(v.I*86400, 0).UTC().Format("2006-01-02") + "'"
	case KindTimestamp:
		return "TIMESTAMP '" + time.UnixMicro(v.I).UTC().Format("2006-01-02 15:04:05.999999") + "'"
	}
	return "<invalid>"
}

// Compare orders two values of the same kind: -1, 0 or +1. NaN sorts above
// every number (Spark's ordering). Values of different kinds are an error.
func Compare(a, b Value) (int, error) {
	if a.Kind != b.Kind {
		// Integers compare against decimals and floats exactly enough.
		if a.Kind == KindInt && b.Kind == KindFloat {
			a = Float(float64(a.I))
		} else if a.Kind == KindFloat && b.Kind == KindInt {
			b = Float(float64(b.I))
		} else {
			return 0, fmt.Errorf("cannot compare %v with %v", a.Kind, b.Kind)
		}
	}
	switch a.Kind {
	case KindInt, KindDate, KindTimestamp, KindBool:
		return cmp.Compare(a.I, b.I), nil
	case KindFloat:
		an, bn := math.IsNaN(a.F), math.IsNaN(b.F)
		switch {
		case an && bn:
			return 0, nil
		case an:
			return 1, nil
		case bn:
			return -1, nil
		case a.F < b.F:
			return -1, nil
		case a.F > b.F:
			return 1, nil
		}
		return 0, nil
	case KindDecimal:
		return a.D.Cmp(b.D), nil
	case KindString:
		return strings.Compare(a.S, b.S), nil
	}
	return 0, fmt.Errorf("cannot compare values of kind %v", a.Kind)
}

// ParseStat converts a statistics value (decoded JSON: json.Number,
// float64, string, bool) into a Value of kind k. Timestamps accept ISO-8601
// with offset or Z, and zone-less (timestamp_ntz) forms.
func ParseStat(k Kind, raw any) (Value, error) {
	switch k {
	case KindInt:
		switch x := raw.(type) {
		case json.Number:
			i, err := x.Int64()
			if err != nil {
				return Value{}, fmt.Errorf("integer stat %q: %w", x, err)
			}
			return Int(i), nil
		case float64:
			if x != math.Trunc(x) {
				return Value{}, fmt.Errorf("integer stat %v is fractional", x)
			}
			return Int(int64(x)), nil
		}
	case KindFloat:
		switch x := raw.(type) {
		case json.Number:
			f, err := strconv.ParseFloat(string(x), 64)
			if err != nil {
				return Value{}, fmt.Errorf("float stat %q: %w", x, err)
			}
			return Float(f), nil
		case float64:
			return Float(x), nil
		case string: // "NaN", "Infinity" written by some engines
			f, err := strconv.ParseFloat(x, 64)
			if err != nil {
				return Value{}, fmt.Errorf("float stat %q: %w", x, err)
			}
			return Float(f), nil
		}
	case KindDecimal:
		switch x := raw.(type) {
		case json.Number:
			return Decimal(string(x))
		case float64:
			return Value{Kind: KindDecimal, D: new(big.Rat).SetFloat64(x)}, nil
		case string:
			return Decimal(x)
		}
	case KindString:
		if s, ok := raw.(string); ok {
			return String(s), nil
		}
	case KindBool:
		if b, ok := raw.(bool); ok {
			return Bool(b), nil
		}
	case KindDate:
		if s, ok := raw.(string); ok {
			return ParseDate(s)
		}
	case KindTimestamp:
		if s, ok := raw.(string); ok {
			return ParseTimestamp(s)
		}
	}
	return Value{}, fmt.Errorf("stat value %v (%T) does not fit kind %v", raw, raw, k)
}

// ParseDate parses yyyy-MM-dd.
func ParseDate(s string) (Value, error) {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		return Value{}, fmt.Errorf("date %q: %w", s, err)
	}
	return Date(t.Unix() / 86400), nil
}

var timestampLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999Z0700",
}

// ParseTimestamp parses the timestamp forms Delta writes in statistics and
// partition values. Zone-less forms are read as UTC wall clock.
func ParseTimestamp(s string) (Value, error) { return ParseTimestampIn(s, time.UTC) }

// ParseTimestampIn is ParseTimestamp reading a value without a zone or
// offset as a wall-clock time in loc (nil: UTC), as Spark writes timestamp
// partition values in the writer's session time zone.
func ParseTimestampIn(s string, loc *time.Location) (Value, error) {
	if loc == nil {
		loc = time.UTC
	}
	for _, layout := range timestampLayouts {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return Timestamp(t.UnixMicro()), nil
		}
	}
	return Value{}, fmt.Errorf("timestamp %q: unrecognised format", s)
}

// ParseLiteral parses a literal given as text (command line, policy
// files, partition values) for a column of kind k.
func ParseLiteral(k Kind, s string) (Value, error) {
	switch k {
	case KindInt:
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return Value{}, fmt.Errorf("integer %q: %w", s, err)
		}
		return Int(i), nil
	case KindFloat:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return Value{}, fmt.Errorf("float %q: %w", s, err)
		}
		return Float(f), nil
	case KindDecimal:
		return Decimal(s)
	case KindString:
		return String(s), nil
	case KindBool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return Value{}, fmt.Errorf("boolean %q: %w", s, err)
		}
		return Bool(b), nil
	case KindDate:
		return ParseDate(s)
	case KindTimestamp:
		if v, err := ParseTimestamp(s); err == nil {
			return v, nil
		}
		if v, err := ParseDate(s); err == nil {
			return Timestamp(v.I * 86400 * 1_000_000), nil
		}
		return Value{}, fmt.Errorf("timestamp %q: unrecognised format", s)
	}
	return Value{}, fmt.Errorf("no literal of kind %v", k)
}

func (k Kind) String() string {
	switch k {
	case KindInt:
		return "int"
	case KindFloat:
		return "float"
	case KindDecimal:
		return "decimal"
	case KindString:
		return "string"
	case KindBool:
		return "bool"
	case KindDate:
		return "date"
	case KindTimestamp:
		return "timestamp"
	}
	return "invalid"
}
