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

// An operation that committed nothing but did work (a checkpoint written)
// is "done", and so is its run: /status, the counters and the log say
// what it did instead of "noop" and "no operation found work to do".
func TestAnOperationThatDidWorkWithoutACommitIsDoneNotNoop(t *testing.T) {
	clock := newFakeClock()
	run := &recordingRun{replies: []reply{
		{},
		{rep: RunReport{Done: []string{"checkpoint of version 10 written (1.2 KiB)"}}},
		{},
	}}
	var logs testutil.SyncBuffer
	s := New(Config[policies.Policy]{Spec: policySpec, Same: samePolicy,
		Run: run.run, Poll: (&scriptedPoll{}).poll, Workers: 1, PollInterval: time.Hour,
		BackoffBase: 10 * time.Second, BackoffMax: time.Minute, Clock: clock, Rand: func() float64 { return 0.5 },
		Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info}),
	})
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	s.Apply([]policies.Policy{testPolicy("ops")})
	if err := s.Trigger("ops", ReasonAPI); err != nil {
		t.Fatal(err)
	}
	eventually(t, "run recorded", func() bool { return statusOf(s, "ops").LastRun != nil })
	st := statusOf(s, "ops")
	var got []string
	for _, o := range st.LastRun.Ops {
		got = append(got, o.Op+"="+o.Result)
	}
	if strings.Join(got, " ") != "compact=noop expire=done vacuum=noop never=noop" || st.LastRun.Result != ResultDone {
		t.Fatalf("ops %v, run result %s; want the checkpointing operation and the run done", got, st.LastRun.Result)
	}
	if d := st.LastRun.Report.Done; len(d) != 1 || d[0] != "checkpoint of version 10 written (1.2 KiB)" {
		t.Errorf("run report done = %q", d)
	}
	if st.Counters.Runs[ResultDone] != 1 || st.Counters.Runs[ResultNoop] != 0 {
		t.Errorf("runs %v, want one done and no noop", st.Counters.Runs)
	}
	eventually(t, "the run's log line", func() bool { return strings.Contains(logs.String(), "run finished") })
	if l := logs.String(); !strings.Contains(l, `result=done`) || !strings.Contains(l, `done="checkpoint of version 10 written (1.2 KiB)"`) || strings.Contains(l, "no operation found work to do") {
		t.Errorf("log:\n%s\nwant result=done and what was done", l)
	}
}
