package main

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/scheduler"
)

func TestThePlanOfAHaltedTableAnswers409WithTheHaltReason(t *testing.T) {
	dir := t.TempDir()
	writePolicy(t, dir, "h.hcl", "table \"h\" {\n  url = \"mem://h\"\n}\n")
	fb := &fakeBackend{runs: map[string]int{}}
	be := fb.backend()
	unsupported := errors.New("table h: writer feature \"fancyFeature\" is not supported")
	be.Run = func(ctx context.Context, req scheduler.RunRequest[policies.Policy]) (scheduler.RunReport, error) {
		return scheduler.RunReport{}, failure.With(failure.Halt, unsupported)
	}
	// What halts a run usually stops its plan too.
	be.Plan = func(ctx context.Context, p policies.Policy, exclude map[string]bool) (any, error) {
		return nil, failure.With(failure.Halt, unsupported)
	}
	td := startTestDaemonWith(t, dir, fb, be)
	if code := post(t, td.base+"/tables/h/run"); code != http.StatusAccepted {
		t.Fatalf("POST run: %d", code)
	}
	waitFor(t, "h halted", func() bool { return td.d.Scheduler().Status()[0].Halted })

	code, body := get(t, td.base+"/tables/h/plan")
	if code != http.StatusConflict {
		t.Fatalf("GET plan of a halted table: %d %s, want 409", code, body)
	}
	if !strings.Contains(body, "halted") || !strings.Contains(body, "fancyFeature") {
		t.Errorf("body %s does not say the table is halted and why", body)
	}
	if code := post(t, td.base+"/tables/h/run"); code != http.StatusConflict {
		t.Errorf("POST run of a halted table: %d, want 409", code)
	}
}
