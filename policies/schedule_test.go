package policies

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSchedulesThatWouldRunEverySecondOrCannotBeReadAreRefused(t *testing.T) {
	cases := []struct {
		spec string
		want []string // substrings of the error
	}{
		{"@every -1m", []string{"@every", "-1m", "positive"}},
		{"@every 0s", []string{"@every", "0s", "positive"}},
		{"@every 0d", []string{"@every", "positive"}},
		{"@every 500ms", []string{"@every", "at least 1s"}},
		{"@every soon", []string{"@every", "soon", "7d"}},
		{"61 * * * *", []string{"minute", "61", "0-59"}},
		{"0 24 * * *", []string{"hour", "24", "0-23"}},
		{"0 0 0 * *", []string{"day of month", "0", "1-31"}},
		{"0 0 1 13 *", []string{"month", "13", "1-12"}},
		{"0 0 * * 8", []string{"day of week", "8", "0-6"}},
		{"0 0 * *", []string{"5 fields", "got 4"}},
		{"every minute", []string{"5 fields", "got 2"}},
		{"@sometimes", []string{"@sometimes", "@every"}},
	}
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			_, err := ParseSchedule(c.spec)
			if err == nil {
				t.Fatalf("ParseSchedule(%q) accepted it", c.spec)
			}
			if !errors.Is(err, ErrBadSchedule) {
				t.Errorf("error %v does not wrap ErrBadSchedule", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestEveryTakesThePolicyDurationSyntax(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		spec string
		gap  time.Duration
	}{
		{"@every 1d", 24 * time.Hour},
		{"@every 90s", 90 * time.Second},
		{"@every 1h30m", 90 * time.Minute},
		{"*/5 * * * *", 5 * time.Minute},
		{"@hourly", time.Hour},
	}
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			s, err := ParseSchedule(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			first := s.Next(start)
			if got := s.Next(first).Sub(first); got != c.gap {
				t.Fatalf("gap between runs = %v, want %v", got, c.gap)
			}
		})
	}
}

func TestAScheduleThatNeverFiresIsAWarningAtItsLine(t *testing.T) {
	set, err := Parse(map[string][]byte{"t.hcl": []byte("table \"t\" {\n  url = \"mem://t\"\n  schedule = \"0 0 31 2 *\"\n}\n")})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Warnings) != 1 {
		t.Fatalf("warnings = %v, want one", set.Warnings)
	}
	w := FormatDiagnostic(set.Warnings[0])
	for _, s := range []string{"t.hcl:3:3", "never fires", "0 0 31 2 *"} {
		if !strings.Contains(w, s) {
			t.Errorf("warning %q does not say %q", w, s)
		}
	}
	set, err = Parse(map[string][]byte{"t.hcl": []byte("table \"t\" {\n  url = \"mem://t\"\n  schedule = \"0 0 29 2 *\"\n}\n")})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Warnings) != 0 {
		t.Fatalf("a schedule that fires on leap days warned: %v", set.Warnings)
	}
}

func TestANonPositiveEveryIsReportedAtTheScheduleAttribute(t *testing.T) {
	_, err := Parse(map[string][]byte{"t.hcl": []byte("table \"t\" {\n  url = \"mem://t\"\n  schedule = \"@every -1m\"\n}\n")})
	if err == nil || !strings.Contains(err.Error(), "t.hcl:3:3: Invalid value for schedule") || !strings.Contains(err.Error(), "positive") {
		t.Fatalf("err = %v", err)
	}
}
