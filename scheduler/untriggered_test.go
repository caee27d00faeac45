package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/policies"
)

// A table whose backlog crosses no trigger says so once, at its first poll,
// with how far each trigger is and how to run it now: a newcomer's daemon
// otherwise sits silent on a table with a few small files.
func TestTheFirstPollOfATableNoTriggerFiresForSaysHowFarEachTriggerIs(t *testing.T) {
	clock := newFakeClock()
	run := func(ctx context.Context, req RunRequest[policies.Policy]) (RunReport, error) {
		t.Errorf("a run started: %+v", req.Op)
		return RunReport{}, nil
	}
	var logs testutil.SyncBuffer
	poll := &scriptedPoll{}
	poll.set(4, Backlog{SmallFiles: 5, MergeableFiles: 5, Files: 5, DeletedRowsRatio: 0.01})
	s := New(Config[policies.Policy]{Spec: policySpec, Same: samePolicy, Run: run, Poll: poll.poll,
		Clock: clock, Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	s.Apply([]policies.Policy{testPolicy("events")})
	eventually(t, "the first poll's line", func() bool { return strings.Contains(logs.String(), "no trigger crossed yet") })
	line := logs.String()
	runsBy := clock.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
	for _, want := range []string{"mergeable_files=5", "small_files_trigger=50", "deleted_rows_ratio=0.01", "deleted_rows_ratio_trigger=0.05", "runs_by=" + runsBy, `run_now="POST /tables/events/run"`} {
		if !strings.Contains(line, want) {
			t.Errorf("the line lacks %q:\n%s", want, line)
		}
	}
	// Later polls of an unchanged table say nothing more.
	clock.Advance(time.Minute)
	eventually(t, "a second poll", func() bool { return poll.polls() >= 2 })
	if n := strings.Count(logs.String(), "no trigger crossed yet"); n != 1 {
		t.Errorf("%d lines, want 1:\n%s", n, logs.String())
	}
}
