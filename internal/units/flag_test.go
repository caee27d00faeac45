package units

import (
	"flag"
	"io"
	"testing"
	"time"
)

// The duration flag reads the policy syntax and refuses what a policy
// refuses, so a flag and a policy file agree.
func TestDurationFlagReadsThePolicySyntax(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want time.Duration
		ok   bool
	}{
		{"7d", 7 * 24 * time.Hour, true},
		{"1h30m", 90 * time.Minute, true},
		{"30s", 30 * time.Second, true},
		{"-1h", 0, false},
		{"soon", 0, false},
	} {
		var d time.Duration
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Var(DurationFlag{D: &d}, "wait", "")
		err := fs.Parse([]string{"--wait", tc.arg})
		if (err == nil) != tc.ok || d != tc.want {
			t.Errorf("--wait %s: got %v, err %v; want %v, ok %v", tc.arg, d, err, tc.want, tc.ok)
		}
	}
}
