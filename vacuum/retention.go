package vacuum

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/compactord/compactord/delta"
)

// PropDeletedFileRetention is the table property with the retention of
// tombstones and, so, of VACUUM.
const PropDeletedFileRetention = "delta.deletedFileRetentionDuration"

// DefaultRetention is Delta's default for PropDeletedFileRetention
// ("interval 1 week").
const DefaultRetention = 7 * 24 * time.Hour

// ErrRetentionTooShort is wrapped when a retention below the table's is
// asked for without ForceRetention.
var ErrRetentionTooShort = errors.New("retention shorter than the table's delta.deletedFileRetentionDuration")

// TableRetention returns the table's tombstone retention: its
// delta.deletedFileRetentionDuration in Spark's interval syntax, or the
// one-week default.
func TableRetention(meta *delta.Metadata) (time.Duration, error) {
	v, ok := meta.Configuration[PropDeletedFileRetention]
	if !ok {
		return DefaultRetention, nil
	}
	d, err := parseInterval(v)
	if err != nil {
		return 0, fmt.Errorf("table property %s: %w", PropDeletedFileRetention, err)
	}
	return d, nil
}

// checkRetention applies Spark's checkRetentionPeriodSafety: a negative
// retention is refused; one shorter than the table's is refused unless
// forced.
func checkRetention(retention, table time.Duration, force bool) error {
	if retention < 0 {
		return fmt.Errorf("vacuum retention %s is negative", retention)
	}
	if retention < table && !force {
		return fmt.Errorf("%w: asked for %s, the table keeps tombstones for %s; files that concurrent writers and readers of versions inside %s still need could be deleted (give --force-retention to vacuum anyway)",
			ErrRetentionTooShort, retention, table, table)
	}
	return nil
}

// intervalUnits are the calendar-interval units Delta accepts for its
// duration properties (months and years are refused: they have no fixed
// length).
var intervalUnits = map[string]time.Duration{
	"week": 7 * 24 * time.Hour, "day": 24 * time.Hour, "hour": time.Hour, "minute": time.Minute,
	"second": time.Second, "millisecond": time.Millisecond, "microsecond": time.Microsecond,
}

// parseInterval reads Spark's interval syntax as Delta reads its duration
// properties: an optional "interval", then one or more "<number> <unit>"
// pairs ("interval 1 week", "7 days", "interval 2 hours 30 minutes").
func parseInterval(s string) (time.Duration, error) {
	f := strings.Fields(strings.ToLower(s))
	if len(f) > 0 && f[0] == "interval" {
		f = f[1:]
	}
	if len(f) == 0 || len(f)%2 != 0 {
		return 0, fmt.Errorf("bad interval %q: want e.g. \"interval 7 days\"", s)
	}
	var total float64
	for i := 0; i < len(f); i += 2 {
		n, err := strconv.ParseFloat(f[i], 64)
		if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
			return 0, fmt.Errorf("bad interval %q: %q is not a number", s, f[i])
		}
		u := strings.TrimSuffix(f[i+1], "s")
		d, ok := intervalUnits[u]
		if !ok {
			return 0, fmt.Errorf("bad interval %q: unit %q (want weeks, days, hours, minutes, seconds, milliseconds or microseconds)", s, f[i+1])
		}
		total += n * float64(d)
	}
	if total > math.MaxInt64 || total < math.MinInt64 {
		return 0, fmt.Errorf("bad interval %q: out of range", s)
	}
	return time.Duration(total), nil
}

// ParseRetention reads a retention given on the command line or in a
// policy: Spark's interval syntax ("interval 7 days", "168 hours") or a
// compact duration ("168h", "7d", "0h").
func ParseRetention(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(strings.ToLower(t), "interval") || strings.ContainsAny(t, " \t") {
		return parseInterval(t)
	}
	if n, ok := strings.CutSuffix(t, "d"); ok {
		days, err := strconv.ParseFloat(n, 64)
		if err != nil || days < 0 {
			return 0, fmt.Errorf("bad retention %q: want e.g. \"168h\", \"7d\" or \"interval 7 days\"", s)
		}
		return time.Duration(days * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("bad retention %q: want e.g. \"168h\", \"7d\" or \"interval 7 days\"", s)
	}
	return d, nil
}
