package main

import (
	"context"
	"errors"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/scheduler"
)

// errBackendPending is returned until the Delta backend is wired to the
// snapshot loader and compaction run (scheduler.Compact).
var errBackendPending = errors.New("delta backend not wired yet: waiting for delta.LoadSnapshot and scheduler.Compact")

func newDeltaBackend(log hclog.Logger) backend {
	return backend{
		Run: func(ctx context.Context, req scheduler.RunRequest) (scheduler.RunReport, error) {
			return scheduler.RunReport{}, errBackendPending
		},
		Poll: func(ctx context.Context, p policies.Policy, lastSeen int64) (scheduler.PollResult, error) {
			return scheduler.PollResult{}, errBackendPending
		},
		Plan: func(ctx context.Context, p policies.Policy, exclude map[string]bool) (any, error) {
			return nil, errBackendPending
		},
	}
}
