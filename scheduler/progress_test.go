package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/internal/progress"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/policies"
)

func TestARunningOperationsProgressIsInStatusAndLoggedEveryInterval(t *testing.T) {
	clock := newFakeClock()
	started := clock.Now()
	reported := make(chan struct{})
	release := make(chan struct{})
	run := func(ctx context.Context, req RunRequest[policies.Policy]) (RunReport, error) {
		req.Progress(progress.Progress{Op: "compaction", Phase: "rewrite", Files: 3, FilesTotal: 10, Bytes: 300, BytesTotal: 1000, Started: started})
		close(reported)
		<-release
		return RunReport{}, nil
	}
	var logs testutil.SyncBuffer
	s := New(Config[policies.Policy]{Spec: policySpec, Same: samePolicy, Run: run, Poll: (&scriptedPoll{}).poll,
		Clock: clock, ProgressLogInterval: 10 * time.Second,
		Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	s.Apply([]policies.Policy{testPolicy("t")})
	if err := s.Trigger("t", ReasonAPI); err != nil {
		t.Fatal(err)
	}
	<-reported
	st := statusOf(s, "t")
	if st.State != StateRunning || st.Progress == nil || st.Progress.Files != 3 || st.Progress.BytesTotal != 1000 || !st.Progress.Started.Equal(started) {
		t.Fatalf("status while running: state %s, progress %+v", st.State, st.Progress)
	}
	if strings.Contains(logs.String(), "run progress") {
		t.Fatalf("progress logged before the interval:\n%s", logs.String())
	}
	// The poll timer and the progress timer are armed; advancing the clock
	// past the interval fires the progress log.
	clock.Advance(10 * time.Second)
	eventually(t, "progress log line", func() bool { return strings.Contains(logs.String(), "run progress") })
	line := logs.String()
	for _, want := range []string{"op=compaction", "phase=rewrite", "files=3", "files_total=10", "bytes=300", "bytes_total=1000", "percent=30", "elapsed=10s", "eta=23s"} {
		if !strings.Contains(line, want) {
			t.Errorf("progress line lacks %q:\n%s", want, line)
		}
	}
	close(release)
	eventually(t, "idle", func() bool { return statusOf(s, "t").State == StateIdle })
	if p := statusOf(s, "t").Progress; p != nil {
		t.Errorf("progress after the run: %+v", p)
	}
}
