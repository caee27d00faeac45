package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Day and Week are the fixed-length day and week of both syntaxes (Spark's
// intervals count a day as 24 hours, as Delta's getMilliSeconds does).
const (
	Day  = 24 * time.Hour
	Week = 7 * Day
)

// ParseDuration parses a duration in the compact policy syntax, a sequence
// of numbers with units ns, us (µs), ms, s, m, h, d, w ("90s", "1h30m",
// "7d", "1.5h", "-5m"), or in Spark's interval syntax as ParseInterval
// reads it ("interval 7 days", "2 weeks"). A bare number is refused: it
// has no unit.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	l := strings.ToLower(t)
	if strings.HasPrefix(l, "interval") || strings.ContainsFunc(t, unicode.IsSpace) {
		return ParseInterval(t)
	}
	d, err := parseCompact(t)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q: %v (want e.g. \"30s\", \"5m\", \"1h30m\", \"7d\" or \"interval 7 days\")", s, err)
	}
	return d, nil
}

func parseCompact(t string) (time.Duration, error) {
	if t == "" {
		return 0, fmt.Errorf("empty")
	}
	neg := false
	switch t[0] {
	case '-', '+':
		neg = t[0] == '-'
		t = t[1:]
	}
	if t == "0" {
		return 0, nil
	}
	var total int64
	for t != "" {
		i := 0
		for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
			i++
		}
		if i == 0 {
			return 0, fmt.Errorf("expected a number at %q", t)
		}
		num := t[:i]
		v, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return 0, fmt.Errorf("bad number %q", num)
		}
		t = t[i:]
		j := 0
		for j < len(t) && !(t[j] >= '0' && t[j] <= '9' || t[j] == '.') {
			j++
		}
		var unit time.Duration
		switch t[:j] {
		case "ns":
			unit = time.Nanosecond
		case "us", "µs", "μs":
			unit = time.Microsecond
		case "ms":
			unit = time.Millisecond
		case "s":
			unit = time.Second
		case "m":
			unit = time.Minute
		case "h":
			unit = time.Hour
		case "d":
			unit = Day
		case "w":
			unit = Week
		case "":
			return 0, fmt.Errorf("number %g has no unit", v)
		default:
			return 0, fmt.Errorf("unknown unit %q", t[:j])
		}
		t = t[j:]
		var add int64
		if n, err := strconv.ParseInt(num, 10, 64); err == nil && n <= math.MaxInt64/int64(unit) {
			add = n * int64(unit)
		} else if f := v * float64(unit); f < math.MaxInt64 {
			add = int64(f)
		} else {
			return 0, fmt.Errorf("too large")
		}
		if total > math.MaxInt64-add {
			return 0, fmt.Errorf("too large")
		}
		total += add
	}
	if neg {
		total = -total
	}
	return time.Duration(total), nil
}

// ParseInterval parses a duration the way Delta parses its interval table
// properties (DeltaConfigs.parseCalendarInterval, then Spark's
// IntervalUtils.stringToInterval, then isValidIntervalConfigValue):
// case-insensitive, an optional "interval" prefix, then one or more
// "[+|-]number unit" pairs separated by white space, where unit is
// microsecond, millisecond, second, minute, hour, day or week, singular or
// plural ("interval 1 week", "7 days", "1 day 12 hours", "1.5 seconds").
// Only seconds may have a fraction (at most nine digits); months and years
// are refused, since their length varies, and so is a negative total.
func ParseInterval(s string) (time.Duration, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("bad interval %q: %s (want e.g. \"interval 7 days\", \"1 week\" or \"36 hours\"; months and years are not accepted)", s, fmt.Sprintf(format, a...))
	}
	words := strings.Fields(strings.ToLower(s))
	if len(words) > 0 && words[0] == "interval" {
		words = words[1:]
	}
	if len(words) == 0 {
		return 0, bad("empty")
	}
	var days, micros int64
	for len(words) > 0 {
		num := words[0]
		words = words[1:]
		if (num == "-" || num == "+") && len(words) > 0 {
			num += words[0]
			words = words[1:]
		}
		if len(words) == 0 {
			return 0, bad("%q has no unit", num)
		}
		unit := strings.TrimSuffix(words[0], "s")
		words = words[1:]
		neg := strings.HasPrefix(num, "-")
		digits := strings.TrimLeft(num, "+-")
		if len(num)-len(digits) > 1 {
			return 0, bad("unrecognized number %q", num)
		}
		whole, frac, hasFrac := strings.Cut(digits, ".")
		if whole == "" && frac == "" || !allDigits(whole) || !allDigits(frac) {
			return 0, bad("unrecognized number %q", num)
		}
		if hasFrac && unit != "second" {
			return 0, bad("%q %s cannot have a fractional part (only seconds can)", num, unit)
		}
		if len(frac) > 9 {
			return 0, bad("%q is beyond nanosecond precision", num)
		}
		var v int64
		if whole != "" {
			var err error
			if v, err = strconv.ParseInt(whole, 10, 64); err != nil {
				return 0, bad("%q is too large", num)
			}
		}
		var fracMicros int64
		if frac != "" {
			f, _ := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
			fracMicros = f / 1000
		}
		if neg {
			v, fracMicros = -v, -fracMicros
		}
		mul := func(v, m int64) (int64, error) {
			if v > math.MaxInt64/m || v < math.MinInt64/m {
				return 0, bad("%q %s is too large", num, unit)
			}
			return v * m, nil
		}
		var add int64
		var err error
		switch unit {
		case "microsecond":
			add = v
		case "millisecond":
			add, err = mul(v, 1000)
		case "second":
			add, err = mul(v, 1_000_000)
			add += fracMicros
		case "minute":
			add, err = mul(v, 60_000_000)
		case "hour":
			add, err = mul(v, 3_600_000_000)
		case "day":
			days += v
		case "week":
			var w int64
			w, err = mul(v, 7)
			days += w
		case "month", "year":
			return 0, bad("%s are not accepted (their length varies); use days or weeks", unit+"s")
		default:
			return 0, bad("unknown unit %q", unit)
		}
		if err != nil {
			return 0, err
		}
		if add > 0 && micros > math.MaxInt64-add || add < 0 && micros < math.MinInt64-add {
			return 0, bad("too large")
		}
		micros += add
		if days > math.MaxInt32 || days < math.MinInt32 {
			return 0, bad("too many days")
		}
	}
	const microsPerDay = 86_400_000_000
	if days > (math.MaxInt64/1000-micros)/microsPerDay || days < (math.MinInt64/1000-micros)/microsPerDay {
		return 0, bad("too large")
	}
	total := days*microsPerDay + micros
	if total < 0 {
		return 0, bad("negative")
	}
	return time.Duration(total) * time.Microsecond, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// FormatDuration renders d so that ParseDuration reads it back to d: whole
// days as "7d", otherwise Go's notation without zero trailing units
// ("1h30m", "90s").
func FormatDuration(d time.Duration) string {
	if d != 0 && d%Day == 0 {
		return strconv.FormatInt(int64(d/Day), 10) + "d"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
