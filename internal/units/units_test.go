package units

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseBytesFollowsSparkByteStringsWithBinaryUnits(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		bad  bool
	}{
		// Spark's byteStringAsBytes spellings, all powers of 1024.
		{in: "134217728", want: 134217728},
		{in: "1g", want: 1 << 30},
		{in: "1G", want: 1 << 30},
		{in: "128mb", want: 128 << 20},
		{in: "128MB", want: 128 << 20},
		{in: "32m", want: 32 << 20},
		{in: "1kb", want: 1024},
		{in: "1KB", want: 1024},
		{in: "1k", want: 1024},
		{in: "2t", want: 2 << 40},
		{in: "1pb", want: 1 << 50},
		{in: "50b", want: 50},
		{in: " 64mb ", want: 64 << 20},
		// IEC spellings mean the same.
		{in: "1KiB", want: 1024},
		{in: "128MiB", want: 128 << 20},
		{in: "10 MiB", want: 10 << 20},
		// Fractions (policy files), truncated to whole bytes.
		{in: "1.5KiB", want: 1536},
		{in: "1.5g", want: 3 << 29},
		{in: "0", want: 0},
		{in: "", bad: true},
		{in: "MiB", bad: true},
		{in: "-1MiB", bad: true},
		{in: "1XB", bad: true},
		{in: "1e9", bad: true},
		{in: "1..5m", bad: true},
		{in: "1.", bad: true},
		{in: "99999999999999999999", bad: true},
		{in: "8192p", bad: true},
	} {
		got, err := ParseBytes(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d (bad %v)", c.in, got, err, c.want, c.bad)
		}
	}
}

func TestFormatBytesIsHumanAndReadsBack(t *testing.T) {
	for _, c := range []struct {
		n     int64
		want  string
		exact bool
	}{
		{0, "0 B", true},
		{1, "1 B", true},
		{1023, "1023 B", true},
		{1024, "1 KiB", true},
		{1536, "1.5 KiB", true},
		{4100, "4.0 KiB", false},
		{315064377, "300.5 MiB", false},
		{128 << 20, "128 MiB", true},
		{1<<20 - 1, "1.0 MiB", false},
		{1 << 30, "1 GiB", true},
		{3 << 40, "3 TiB", true},
		{5 << 50, "5 PiB", true},
		{-2048, "-2 KiB", false},
	} {
		got := FormatBytes(c.n)
		if got != c.want {
			t.Errorf("FormatBytes(%d) = %q, want %q", c.n, got, c.want)
		}
		if c.n < 0 {
			continue
		}
		if Exact(c.n) != c.exact {
			t.Errorf("Exact(%d) = %v, want %v", c.n, !c.exact, c.exact)
		}
		back, err := ParseBytes(got)
		if err != nil {
			t.Errorf("ParseBytes(FormatBytes(%d) = %q): %v", c.n, got, err)
			continue
		}
		// Within 0.05 of the unit printed.
		if d := back - c.n; d < 0 && -d > c.n/200+1 || d > 0 && d > c.n/200+1 {
			t.Errorf("FormatBytes(%d) = %q reads back as %d", c.n, got, back)
		}
	}
}

func TestFormatBytesIsTotalOverInt64(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{math.MinInt64, "-8192 PiB"},
		{math.MinInt64 + 1, "-8192.0 PiB"},
		{-5 << 50, "-5 PiB"},
		{-1536, "-1.5 KiB"},
		{-1, "-1 B"},
		{0, "0 B"},
		{1, "1 B"},
		{math.MaxInt64, "8192.0 PiB"},
	} {
		if got := FormatBytes(c.n); got != c.want {
			t.Errorf("FormatBytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestParseIntervalReadsDeltaIntervalProperties(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		// Delta's defaults and documented examples.
		{in: "interval 30 days", want: 30 * Day},
		{in: "interval 1 week", want: Week},
		{in: "interval 2 days", want: 2 * Day},
		{in: "interval 24 hours", want: 24 * time.Hour},
		{in: "2 weeks", want: 2 * Week},
		{in: "365 days", want: 365 * Day},
		{in: "7 days", want: 7 * Day},
		{in: "INTERVAL 7 DAYS", want: 7 * Day},
		{in: "  interval   1 day  12 hours ", want: 36 * time.Hour},
		{in: "interval 1 day -1 hour", want: 23 * time.Hour},
		{in: "interval 1 hour 30 minutes", want: 90 * time.Minute},
		{in: "1.5 seconds", want: 1500 * time.Millisecond},
		{in: "interval .5 second", want: 500 * time.Millisecond},
		{in: "interval 10 milliseconds 7 microseconds", want: 10*time.Millisecond + 7*time.Microsecond},
		{in: "interval 0 seconds", want: 0},
		{in: "+ 3 days", want: 3 * Day},
		{in: "interval 1.0000000001 seconds", bad: true},
		{in: "interval 1 month", bad: true},
		{in: "1 year", bad: true},
		{in: "interval -1 day", bad: true},
		{in: "1.5 days", bad: true},
		{in: "7d", bad: true},
		{in: "7days", bad: true},
		{in: "7 dayz", bad: true},
		{in: "7 dayss", bad: true},
		{in: "7", bad: true},
		{in: "interval", bad: true},
		{in: "", bad: true},
		{in: "interval 7 days 3", bad: true},
		{in: "interval --7 days", bad: true},
		{in: "interval 99999999999 days", bad: true},
	} {
		got, err := ParseInterval(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ParseInterval(%q) = %v, %v; want %v (bad %v)", c.in, got, err, c.want, c.bad)
		}
	}
}

func TestParseDurationReadsBothSyntaxes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "5m", want: 5 * time.Minute},
		{in: "90d", want: 90 * Day},
		{in: "7d", want: 7 * Day},
		{in: "2w", want: 2 * Week},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "1.5h", want: 90 * time.Minute},
		{in: "250ms", want: 250 * time.Millisecond},
		{in: "-5m", want: -5 * time.Minute},
		{in: "0", want: 0},
		{in: "interval 7 days", want: 7 * Day},
		{in: "1 week", want: Week},
		{in: "5", bad: true},
		{in: "xd", bad: true},
		{in: "5y", bad: true},
		{in: "", bad: true},
		{in: "1 month", bad: true},
		{in: "999999999999d", bad: true},
	} {
		got, err := ParseDuration(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v (bad %v)", c.in, got, err, c.want, c.bad)
		}
	}
	for _, d := range []time.Duration{30 * time.Second, time.Minute, 90 * time.Second, 2 * time.Hour, 36 * time.Hour, 48 * time.Hour, 0} {
		back, err := ParseDuration(FormatDuration(d))
		if err != nil || back != d {
			t.Errorf("FormatDuration(%v) = %q reads back as %v, %v", d, FormatDuration(d), back, err)
		}
	}
}

func TestParseSizeWantsAUnitExceptForZero(t *testing.T) {
	for in, want := range map[string]int64{"128MiB": 128 * MiB, "128m": 128 * MiB, "1 GiB": GiB, "512 B": 512, "512b": 512, "1.5k": 1536, "0": 0, " 0 ": 0, "0MiB": 0} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"128":  "128: give a unit, e.g. 128MiB",
		" 64 ": "64: give a unit, e.g. 64MiB",
		"1.5":  "1.5: give a unit",
		"12x":  "unknown unit",
	} {
		if _, err := ParseSize(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseSize(%q): err = %v, want %q", in, err, msg)
		}
	}
	// Table properties keep Spark's rule: a plain number is bytes.
	if n, err := ParseBytes("134217728"); err != nil || n != 128*MiB {
		t.Errorf("ParseBytes(134217728) = %d, %v", n, err)
	}
}
