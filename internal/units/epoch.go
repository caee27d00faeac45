package units

// EpochUnits are the units an integer time column may count since
// 1970-01-01 UTC, as `expire --epoch-unit` and a retention block's
// epoch_unit name them.
var EpochUnits = []string{"days", "seconds", "milliseconds", "microseconds"}

// EpochUnitMicros returns the length of one epoch unit in microseconds;
// ok is false for a name not in EpochUnits.
func EpochUnitMicros(unit string) (micros int64, ok bool) {
	switch unit {
	case "days":
		return 86400 * 1_000_000, true
	case "seconds":
		return 1_000_000, true
	case "milliseconds":
		return 1000, true
	case "microseconds":
		return 1, true
	}
	return 0, false
}
