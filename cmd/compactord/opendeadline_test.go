package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/internal/testutil"
)

// compact, expire and plan open and read their table under the run's store
// deadlines and retry budget: against a store that never answers, each
// fails naming the listing it gave up on, not the end of its caller's
// context (the backstop below, far above 2 attempts of 300ms).
func TestOneShotCommandsGiveUpOnAStoreThatNeverAnswers(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", testutil.SilentEndpoint(t))
	store := []string{"--store-timeout", "300ms", "--store-attempts", "2", "--store-retry-budget", "2"}
	for _, args := range [][]string{
		{"compact", "gs://lake/t"},
		{"expire", "gs://lake/t", "--column", "d", "--before", "2020-01-01"},
		{"plan", "gs://lake/t"},
	} {
		t.Run(args[0], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			var stdout, stderr bytes.Buffer
			code := mainExit(ctx, append(args, store...), &stdout, &stderr)
			if code == 0 {
				t.Fatalf("exit 0 against a silent store:\n%s", stdout.String())
			}
			if ctx.Err() != nil {
				t.Fatalf("the command ran until its caller's context ended: %s", stderr.String())
			}
			msg := stderr.String()
			if !strings.Contains(msg, "list t/_delta_log/") || !strings.Contains(msg, "no answer within 300ms") {
				t.Fatalf("stderr does not name the listing and the store deadline:\n%s", msg)
			}
		})
	}
}
