package main

import (
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/policies"
)

// The daemon block's attempt_stale_after is the window of the daemon's
// runs' start-of-run sweeps (runner.Backend.Options, which compaction and
// retention read; runner's TestCompactionRunReportsTheAttemptsItsStartSwept
// runs such a sweep).
func TestTheDaemonsRunsSweepWithItsAttemptWindow(t *testing.T) {
	dc := policies.DefaultDaemon()
	dc.AttemptStaleAfter = 7 * time.Minute
	if got := newRunner(hclog.NewNullLogger(), dc, nil).Options.AttemptStaleAfter; got != 7*time.Minute {
		t.Fatalf("the daemon's runs sweep with a %v window, want 7m", got)
	}
}
