package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestASummaryCountsEachPackagesTestsAndFailsOnAFailure(t *testing.T) {
	cases := []struct {
		name     string
		events   string
		wantCode int
		want     []string
	}{
		{
			name: "all pass, one skip",
			events: `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"skip","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s\n"}
{"Action":"pass","Package":"p"}
`,
			wantCode: 0,
			want:     []string{"ok  \tp\t0.1s", "tests ran: 2, passed: 1, failed: 0, skipped: 1; packages failed: 0"},
		},
		{
			name: "a failed test prints its output",
			events: `{"Action":"output","Package":"q","Test":"TestC","Output":"boom\n"}
{"Action":"fail","Package":"q","Test":"TestC"}
{"Action":"pass","Package":"q","Test":"TestD"}
{"Action":"fail","Package":"q"}
`,
			wantCode: 1,
			want:     []string{"--- output of failed TestC (q)\nboom", "tests ran: 2, passed: 1, failed: 1, skipped: 0; packages failed: 1"},
		},
		{
			name:     "a build failure fails without tests",
			events:   "# q\nq.go:1: syntax error\n" + `{"Action":"fail","Package":"q"}` + "\n",
			wantCode: 1,
			want:     []string{"q.go:1: syntax error", "packages failed: 1"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			code := run(strings.NewReader(c.events), &out)
			if code != c.wantCode {
				t.Errorf("exit code %d, want %d\n%s", code, c.wantCode, out.String())
			}
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}
