package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Binary byte multiples.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
	TiB int64 = 1 << 40
	PiB int64 = 1 << 50
)

// byteUnits maps every accepted unit (lower case) to its multiple: Spark's
// byteSuffixes plus the IEC spellings.
var byteUnits = map[string]int64{
	"": 1, "b": 1,
	"k": KiB, "kb": KiB, "kib": KiB,
	"m": MiB, "mb": MiB, "mib": MiB,
	"g": GiB, "gb": GiB, "gib": GiB,
	"t": TiB, "tb": TiB, "tib": TiB,
	"p": PiB, "pb": PiB, "pib": PiB,
}

// ParseBytes parses a byte size: "134217728", "128m", "128MB", "1g",
// "1.5GiB", "10 MiB". Units are case-insensitive powers of 1024 (see the
// package doc). Beyond Spark's rules it accepts a space before the unit and
// a decimal fraction (the result is truncated to whole bytes); it refuses
// negative numbers, unknown units and sizes above 2^62 bytes.
func ParseBytes(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	whole, frac, hasFrac := strings.Cut(num, ".")
	if whole == "" && !hasFrac || hasFrac && frac == "" || strings.Contains(frac, ".") {
		return 0, fmt.Errorf("bad size %q: want a non-negative number with an optional unit, e.g. 134217728, 128m, 1GiB", s)
	}
	mult, ok := byteUnits[unit]
	if !ok {
		return 0, fmt.Errorf("bad size %q: unknown unit %q (want b, k/kb/KiB, m/mb/MiB, g/gb/GiB, t/tb/TiB or p/pb/PiB; all powers of 1024)", s, unit)
	}
	const limit = int64(1) << 62
	var n int64
	if whole != "" {
		w, err := strconv.ParseInt(whole, 10, 64)
		if err != nil || w > limit/mult {
			return 0, fmt.Errorf("bad size %q: too large", s)
		}
		n = w * mult
	}
	if frac != "" {
		f, err := strconv.ParseFloat("0."+frac, 64)
		if err != nil {
			return 0, fmt.Errorf("bad size %q: %w", s, err)
		}
		n += int64(math.Floor(f * float64(mult)))
		if n > limit {
			return 0, fmt.Errorf("bad size %q: too large", s)
		}
	}
	return n, nil
}

// ParseSize parses a size that a person wrote, in a flag or a policy file:
// ParseBytes' syntax with the unit required ("128MiB", "1g", "512 B"),
// so that "128", meant as 128 MiB, is not taken for 128 bytes. Only 0
// may go without one (it means "the default" wherever a size is
// optional). Table properties keep ParseBytes: Spark writes
// delta.targetFileSize as a plain byte count.
func ParseSize(s string) (int64, error) {
	n, err := ParseBytes(s)
	if err != nil {
		return 0, err
	}
	if n != 0 && !HasUnit(s) {
		return 0, UnitlessError(strings.TrimSpace(s))
	}
	return n, nil
}

// HasUnit reports whether the size s ends in a unit (b, k, KiB, ...).
func HasUnit(s string) bool {
	t := strings.TrimSpace(s)
	return t != "" && (t[len(t)-1] < '0' || t[len(t)-1] > '9') && t[len(t)-1] != '.'
}

// UnitlessError is ParseSize's error for the count num written without a
// unit.
func UnitlessError(num string) error {
	return fmt.Errorf("%s: give a unit, e.g. %sMiB (B, KiB, MiB, GiB, TiB: powers of 1024; only 0 needs none)", num, num)
}

// FormatBytes renders n for people, in the one size format of every
// report, log and policy compactord prints: below 1 KiB a byte count
// ("512 B"), else the largest binary unit not above n, whole when it
// divides n ("128 MiB", "1 GiB") and with one decimal otherwise
// ("300.5 MiB", "4.0 KiB"). ParseBytes reads the whole forms back to n;
// the others to within 0.05 of their unit (see Exact). It is total over
// int64: a negative n (a corrupt size, an overflowed sum) is printed with
// a minus sign, math.MinInt64 included.
func FormatBytes(n int64) string {
	if n < 0 {
		// -n overflows for math.MinInt64; its magnitude fits a uint64.
		return "-" + formatMagnitude(-uint64(n))
	}
	return formatMagnitude(uint64(n))
}

// formatMagnitude is FormatBytes of a non-negative size.
func formatMagnitude(n uint64) string {
	for i, u := range sizeUnits {
		m := uint64(u.m)
		if n < m {
			continue
		}
		if n%m == 0 {
			return strconv.FormatUint(n/m, 10) + " " + u.s
		}
		v := math.Round(float64(n)/float64(m)*10) / 10
		if v >= 1024 && i > 0 {
			// 1048575 B is 1.0 MiB, not 1024.0 KiB.
			u, v = sizeUnits[i-1], math.Round(float64(n)/float64(sizeUnits[i-1].m)*10)/10
		}
		return strconv.FormatFloat(v, 'f', 1, 64) + " " + u.s
	}
	return strconv.FormatUint(n, 10) + " B"
}

// Exact reports whether ParseBytes reads FormatBytes(n) back to n; where
// it does not, a file that must be read back (a policy) carries the byte
// count itself.
func Exact(n int64) bool {
	back, err := ParseBytes(FormatBytes(n))
	return err == nil && back == n
}

// sizeUnits are FormatBytes' units, largest first.
var sizeUnits = []struct {
	s string
	m int64
}{{"PiB", PiB}, {"TiB", TiB}, {"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB}}
