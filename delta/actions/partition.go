package actions

import (
	"fmt"
	"maps"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	deltaschema "github.com/compactord/compactord/delta/schema"
)

// HiveDefaultPartition is the directory name (and, from some writers, the
// partition value) Spark uses for a null partition value.
const HiveDefaultPartition = "__HIVE_DEFAULT_PARTITION__"

// SamePartitionValues reports whether two partitionValues maps hold the
// same values under the same keys (null and absent differ from "").
func SamePartitionValues(a, b map[string]*string) bool {
	return maps.EqualFunc(a, b, func(x, y *string) bool {
		return x == y || x != nil && y != nil && *x == *y
	})
}

// ParsePartitionValues parses an add's partitionValues (keyed by physical
// column name) into logical Go values (see AppendJSON for the types),
// keyed by physical name. Missing entries, JSON null, the empty string and
// __HIVE_DEFAULT_PARTITION__ are null; the literal string "null" is the
// string "null". loc is the zone of zone-less timestamps (Spark writes
// them in the writer's session zone; nil = UTC).
func ParsePartitionValues(meta *Metadata, schema *deltaschema.StructType, values map[string]*string, loc *time.Location) (map[string]any, error) {
	mode, err := ColumnMappingMode(meta)
	if err != nil {
		return nil, err
	}
	fields, err := PartitionFields(meta, schema)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(fields))
	for _, f := range fields {
		name := deltaschema.PhysName(f, mode)
		raw, ok := values[name]
		if !ok {
			// Tolerate writers that key by logical name.
			raw = values[f.Name]
		}
		v, err := ParsePartitionValue(raw, f.Type, loc)
		if err != nil {
			return nil, fmt.Errorf("partition column %q: %w", f.Name, err)
		}
		out[name] = v
	}
	return out, nil
}

// ParsePartitionValue parses one serialized partition value of type t.
func ParsePartitionValue(raw *string, t *deltaschema.DataType, loc *time.Location) (any, error) {
	if raw == nil || *raw == HiveDefaultPartition {
		return nil, nil
	}
	s := *raw
	if s == "" {
		return nil, nil
	}
	if loc == nil {
		loc = time.UTC
	}
	bad := func(err error) (any, error) {
		return nil, fmt.Errorf("invalid %s partition value %q: %w", t.String(), s, err)
	}
	switch t.Name {
	case "string":
		return s, nil
	case "binary":
		return []byte(s), nil
	case "boolean":
		switch strings.ToLower(s) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return bad(fmt.Errorf("not a boolean"))
	case "byte", "short", "integer", "long":
		bits := map[string]int{"byte": 8, "short": 16, "integer": 32, "long": 64}[t.Name]
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, bits)
		if err != nil {
			return bad(err)
		}
		return n, nil
	case "float", "double":
		var f float64
		switch s {
		case "NaN":
			f = math.NaN()
		case "Infinity", "+Infinity":
			f = math.Inf(1)
		case "-Infinity":
			f = math.Inf(-1)
		default:
			bits := 64
			if t.Name == "float" {
				bits = 32
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(s), bits)
			if err != nil {
				return bad(err)
			}
			f = v
		}
		if t.Name == "float" {
			return float32(f), nil
		}
		return f, nil
	case "date":
		d, err := time.ParseInLocation("2006-01-02", strings.TrimSpace(s), time.UTC)
		if err != nil {
			return bad(err)
		}
		return deltaschema.Date(deltaschema.FloorDiv(d.Unix(), 86400)), nil
	case "timestamp":
		ts, err := parsePartitionTime(s, loc, true)
		if err != nil {
			return bad(err)
		}
		return deltaschema.Timestamp(TimeMicros(ts)), nil
	case "timestamp_ntz":
		ts, err := parsePartitionTime(s, time.UTC, false)
		if err != nil {
			return bad(err)
		}
		return deltaschema.TimestampNTZ(TimeMicros(ts)), nil
	case "decimal":
		d, err := ParseDecimal(strings.TrimSpace(s), t.Precision, t.Scale)
		if err != nil {
			return bad(err)
		}
		return d, nil
	}
	return nil, fmt.Errorf("partition values of type %s are not supported", t.String())
}

func TimeMicros(t time.Time) int64 {
	return t.Unix()*1_000_000 + int64(t.Nanosecond()/1000)
}

// parsePartitionTime accepts `yyyy-MM-dd HH:mm:ss[.ffffff]` (zone-less, in
// loc), the same with a 'T', and ISO-8601 with a zone (Z or an offset) when
// zoned is true.
func parsePartitionTime(s string, loc *time.Location, zoned bool) (time.Time, error) {
	s = strings.TrimSpace(s)
	layouts := []string{
		"2006-01-02 15:04:05.999999999",
		"2006-01-02T15:04:05.999999999",
		"2006-01-02 15:04",
		"2006-01-02T15:04",
		"2006-01-02",
	}
	for _, l := range layouts {
		if t, err := time.ParseInLocation(l, s, loc); err == nil {
			return t, nil
		}
	}
	if zoned {
		for _, l := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999Z0700"} {
			if t, err := time.Parse(l, s); err == nil {
				return t, nil
			}
		}
	}
	return time.Time{}, fmt.Errorf("unrecognised timestamp format")
}

// ParseDecimal parses a decimal literal into Decimal at the given scale,
// rejecting values that need more digits than precision or lose digits.
func ParseDecimal(s string, precision, scale int) (deltaschema.Decimal, error) {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return deltaschema.Decimal{}, fmt.Errorf("not a decimal number")
	}
	mul := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)
	r.Mul(r, new(big.Rat).SetInt(mul))
	if !r.IsInt() {
		return deltaschema.Decimal{}, fmt.Errorf("more than %d fractional digits", scale)
	}
	u := new(big.Int).Set(r.Num())
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(precision)), nil)
	if new(big.Int).Abs(u).Cmp(limit) >= 0 {
		return deltaschema.Decimal{}, fmt.Errorf("more than %d digits", precision)
	}
	return deltaschema.Decimal{Unscaled: u, Scale: scale}, nil
}
