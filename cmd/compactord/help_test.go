package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Every subcommand's -h prints its flags and exits 0; a bad flag exits 2.
func TestEveryCommandsHelpExitsZero(t *testing.T) {
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := mainExit(context.Background(), []string{c.name, "-h"}, &out, &errOut); code != 0 {
				t.Fatalf("%s -h exited %d: %s", c.name, code, errOut.String())
			}
			if !strings.Contains(errOut.String()+out.String(), "-") {
				t.Errorf("%s -h printed no flags", c.name)
			}
			if code := mainExit(context.Background(), []string{c.name, "--no-such-flag"}, &out, &errOut); code != 2 {
				t.Errorf("%s --no-such-flag exited %d, want 2", c.name, code)
			}
		})
	}
}
