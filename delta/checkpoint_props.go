package delta

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Table properties that govern checkpoints and log cleanup.
const (
	PropCheckpointInterval         = "delta.checkpointInterval"
	PropCheckpointPolicy           = "delta.checkpointPolicy"
	PropWriteStatsAsJSON           = "delta.checkpoint.writeStatsAsJson"
	PropWriteStatsAsStruct         = "delta.checkpoint.writeStatsAsStruct"
	PropDeletedFileRetention       = "delta.deletedFileRetentionDuration"
	PropSetTransactionRetention    = "delta.setTransactionRetentionDuration"
	PropLogRetention               = "delta.logRetentionDuration"
	PropEnableExpiredLogCleanup    = "delta.enableExpiredLogCleanup"
	PropCheckpointProtectionBefore = "delta.requireCheckpointProtectionBeforeVersion"
)

// CheckpointProps are the table properties a checkpoint writer and the log
// cleanup read, with Spark's defaults applied.
type CheckpointProps struct {
	// Interval is delta.checkpointInterval (default 10).
	Interval int64
	// PolicyV2 is delta.checkpointPolicy=v2 (default classic).
	PolicyV2 bool
	// StatsAsJSON is delta.checkpoint.writeStatsAsJson (default true).
	StatsAsJSON bool
	// StatsAsStruct is delta.checkpoint.writeStatsAsStruct (Spark's default
	// true; PROTOCOL.md says false, Spark is what readers meet).
	StatsAsStruct bool
	// TombstoneRetention is delta.deletedFileRetentionDuration (default 1 week).
	TombstoneRetention time.Duration
	// TxnRetention is delta.setTransactionRetentionDuration; 0 = unset
	// (txn entries never expire).
	TxnRetention time.Duration
	// LogRetention is delta.logRetentionDuration (default 30 days).
	LogRetention time.Duration
	// LogCleanup is delta.enableExpiredLogCleanup (default true).
	LogCleanup bool
	// ProtectedBefore is delta.requireCheckpointProtectionBeforeVersion
	// (default 0: nothing protected).
	ProtectedBefore int64
}

// CheckpointPropsOf reads the checkpoint and log-cleanup properties of a
// table's metadata. An unparseable value is an error naming the property.
func CheckpointPropsOf(meta *Metadata) (CheckpointProps, error) {
	p := CheckpointProps{
		Interval:           10,
		StatsAsJSON:        true,
		StatsAsStruct:      true,
		TombstoneRetention: 7 * 24 * time.Hour,
		LogRetention:       30 * 24 * time.Hour,
		LogCleanup:         true,
	}
	conf := meta.Configuration
	bad := func(key string, err error) (CheckpointProps, error) {
		return CheckpointProps{}, fmt.Errorf("table property %s=%q: %w", key, conf[key], err)
	}
	if v, ok := conf[PropCheckpointInterval]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n <= 0 {
			return bad(PropCheckpointInterval, fmt.Errorf("want a positive integer"))
		}
		p.Interval = n
	}
	if v, ok := conf[PropCheckpointPolicy]; ok {
		switch strings.TrimSpace(v) {
		case "classic":
		case "v2":
			p.PolicyV2 = true
		default:
			return bad(PropCheckpointPolicy, fmt.Errorf("want classic or v2"))
		}
	}
	for _, b := range []struct {
		key string
		dst *bool
	}{{PropWriteStatsAsJSON, &p.StatsAsJSON}, {PropWriteStatsAsStruct, &p.StatsAsStruct}, {PropEnableExpiredLogCleanup, &p.LogCleanup}} {
		if v, ok := conf[b.key]; ok {
			x, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return bad(b.key, fmt.Errorf("want true or false"))
			}
			*b.dst = x
		}
	}
	for _, d := range []struct {
		key string
		dst *time.Duration
	}{{PropDeletedFileRetention, &p.TombstoneRetention}, {PropSetTransactionRetention, &p.TxnRetention}, {PropLogRetention, &p.LogRetention}} {
		if v, ok := conf[d.key]; ok {
			x, err := ParseInterval(v)
			if err != nil {
				return bad(d.key, err)
			}
			*d.dst = x
		}
	}
	if v, ok := conf[PropCheckpointProtectionBefore]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return bad(PropCheckpointProtectionBefore, fmt.Errorf("want a table version"))
		}
		p.ProtectedBefore = n
	}
	return p, nil
}

// ParseInterval parses a Spark calendar-interval table property such as
// "interval 1 week", "30 days" or "interval 2 days 12 hours". The leading
// "interval" is optional; units are week, day, hour, minute, second,
// millisecond and microsecond (singular or plural, any case). Months and
// years are refused, as Spark refuses them for durations.
func ParseInterval(s string) (time.Duration, error) {
	f := strings.Fields(strings.ToLower(strings.TrimSpace(s)))
	if len(f) > 0 && f[0] == "interval" {
		f = f[1:]
	}
	if len(f) == 0 || len(f)%2 != 0 {
		return 0, fmt.Errorf("not an interval (want e.g. \"interval 7 days\")")
	}
	units := map[string]time.Duration{
		"week": 7 * 24 * time.Hour, "day": 24 * time.Hour, "hour": time.Hour, "minute": time.Minute,
		"second": time.Second, "millisecond": time.Millisecond, "microsecond": time.Microsecond,
	}
	var total time.Duration
	for i := 0; i < len(f); i += 2 {
		n, err := strconv.ParseInt(strings.Trim(f[i], "'"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("interval amount %q is not an integer", f[i])
		}
		unit := strings.TrimSuffix(f[i+1], "s")
		d, ok := units[unit]
		if !ok {
			if unit == "month" || unit == "year" {
				return 0, fmt.Errorf("interval unit %q has no fixed length", f[i+1])
			}
			return 0, fmt.Errorf("unknown interval unit %q", f[i+1])
		}
		total += time.Duration(n) * d
	}
	if total < 0 {
		return 0, fmt.Errorf("negative interval")
	}
	return total, nil
}
