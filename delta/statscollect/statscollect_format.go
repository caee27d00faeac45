package statscollect

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/compactord/compactord/delta/schema"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
)

// childNode returns the field of group parent named name (exact match
// first, then case-insensitive as Spark's parquet reader resolves names).
func childNode(parent parquet.Node, name string) parquet.Node {
	if parent.Leaf() {
		return nil
	}
	fields := parent.Fields()
	for _, f := range fields {
		if f.Name() == name {
			return f
		}
	}
	for _, f := range fields {
		if strings.EqualFold(f.Name(), name) {
			return f
		}
	}
	return nil
}

// firstLeafColumn returns the parquet column index of the first leaf at or
// below node n found at path, or -1.
func firstLeafColumn(pq *parquet.Schema, path []string, n parquet.Node) int {
	full := append([]string(nil), path...)
	for !n.Leaf() {
		fields := n.Fields()
		if len(fields) == 0 {
			return -1
		}
		n = fields[0]
		full = append(full, fields[0].Name())
	}
	if lc, ok := pq.Lookup(full...); ok {
		return lc.ColumnIndex
	}
	return -1
}

// statsInt96Micros converts a legacy INT96 timestamp (nanoseconds of day, Julian
// day) to microseconds since the epoch.
func statsInt96Micros(v deprecated.Int96) int64 {
	nanos := int64(uint64(v[1])<<32 | uint64(v[0]))
	days := int64(v[2]) - 2440588 // Julian day of 1970-01-01
	return days*86400_000_000 + statsFloorDiv(nanos, 1000)
}

func scaleTimestamp(v, mul, div int64) int64 {
	if div != 1 {
		return statsFloorDiv(v, div)
	}
	return v * mul
}

func statsFloorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// compareTwosComplement orders two big-endian two's complement integers
// (parquet decimals stored as byte arrays) of possibly different lengths.
func compareTwosComplement(a, b []byte) int {
	na := len(a) > 0 && a[0]&0x80 != 0
	nb := len(b) > 0 && b[0]&0x80 != 0
	if na != nb {
		if na {
			return -1
		}
		return 1
	}
	var ext byte
	if na {
		ext = 0xff
	}
	n := len(a)
	if len(b) > n {
		n = len(b)
	}
	for i := 0; i < n; i++ {
		x, y := ext, ext
		if j := i - (n - len(a)); j >= 0 {
			x = a[j]
		}
		if j := i - (n - len(b)); j >= 0 {
			y = b[j]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

// TwosComplementInt decodes a big-endian two's complement integer.
func TwosComplementInt(b []byte) *big.Int {
	v := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}

// AppendDecimal renders unscaled * 10^-scale as a plain JSON number with
// exactly scale fractional digits (as Java's BigDecimal.toPlainString).
func AppendDecimal(b []byte, unscaled *big.Int, scale int) []byte {
	s := unscaled.String()
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
		b = append(b, '-')
	}
	if scale <= 0 {
		b = append(b, s...)
		for i := 0; i < -scale; i++ {
			b = append(b, '0')
		}
		return b
	}
	for len(s) <= scale {
		s = "0" + s
	}
	b = append(b, s[:len(s)-scale]...)
	b = append(b, '.')
	return append(b, s[len(s)-scale:]...)
}

// appendJSONFloat renders a finite float the way Java's toString shapes
// it for plain magnitudes (shortest digits, at least one fractional digit),
// falling back to exponent notation outside [1e-3, 1e7).
func appendJSONFloat(b []byte, f float64, is32 bool) []byte {
	bits := 64
	if is32 {
		bits = 32
	}
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-3 || abs >= 1e7) {
		return strconv.AppendFloat(b, f, 'E', -1, bits)
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, 'f', -1, bits)
	if !strings.ContainsRune(string(b[start:]), '.') {
		b = append(b, '.', '0')
	}
	return b
}

// utf16Units is the number of UTF-16 code units (Java chars) of r.
func utf16Units(r rune) int {
	if r >= 0x10000 && r <= utf8.MaxRune {
		return 2
	}
	return 1
}

// utf16Prefix returns the byte length of the longest prefix of s holding
// at most n UTF-16 code units without splitting a surrogate pair, and the
// number of units in it.
func utf16Prefix(s string, n int) (bytesLen, units int) {
	for i, r := range s {
		w := utf16Units(r)
		if units+w > n {
			return i, units
		}
		units += w
	}
	return len(s), units
}

// TruncateStringMin returns the min statistic of a string column: s cut to
// at most prefixLen UTF-16 code units, never splitting a surrogate pair
// (a prefix is never greater than the value it comes from).
func TruncateStringMin(s string, prefixLen int) string {
	n, _ := utf16Prefix(s, prefixLen)
	return s[:n]
}

// TruncateStringMax returns the max statistic of a string column. Strings
// of at most prefixLen UTF-16 units are kept. Longer ones are cut to the
// prefix and a tie-breaker is appended that sorts (in UTF-8 byte order)
// after every string with that prefix: U+007F when the next character is
// below U+007F, else U+10FFFF. A next character that is U+10FFFF itself is
// kept and skipped over, since nothing sorts after it; if that runs past
// twice the prefix length the max is dropped (ok = false). Reaching the end
// of s while skipping returns s unchanged.
func TruncateStringMax(s string, prefixLen int) (max string, ok bool) {
	i, units := utf16Prefix(s, prefixLen)
	if i == len(s) {
		return s, true
	}
	limit := 2 * prefixLen
	for units <= limit {
		if i >= len(s) {
			return s, true
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.MaxRune:
			i += size
			units += 2
		case r < 0x7f:
			return s[:i] + "\u007f", true
		default:
			return s[:i] + string(utf8.MaxRune), true
		}
	}
	return "", false
}

// MarkStatsWideChecked is MarkStatsWide for a commit that must not leave
// stats tight by mistake: stats that do not parse are an error rather
// than returned unchanged (an empty string stays empty).
func MarkStatsWideChecked(stats string) (string, error) {
	if stats == "" {
		return "", nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stats), &m); err != nil {
		return "", fmt.Errorf("parse stats: %w", err)
	}
	return MarkStatsWide(stats), nil
}

// MarkStatsWide returns the stats JSON with tightBounds set to false, for
// a file that just got (more) rows deleted by a deletion vector: its
// min/max and null counts may now be wider than the live rows. Other
// fields are kept verbatim; stats that are not a JSON object are returned
// unchanged (an empty string stays empty).
func MarkStatsWide(stats string) string {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stats), &fields); err != nil || fields == nil {
		return stats
	}
	if v, ok := fields["tightBounds"]; ok && string(v) == "false" {
		return stats
	}
	// Rewrite keeping the original key order.
	dec := json.NewDecoder(strings.NewReader(stats))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return stats
	}
	var b []byte
	b = append(b, '{')
	first := true
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return stats
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return stats
		}
		if key == "tightBounds" {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = schema.AppendJSONString(b, key)
		b = append(b, ':')
		b = append(b, raw...)
	}
	if !first {
		b = append(b, ',')
	}
	b = append(b, `"tightBounds":false}`...)
	return string(b)
}
