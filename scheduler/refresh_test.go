package scheduler

import (
	"testing"
	"time"

	"github.com/compactord/compactord/policies"
)

// A run that committed hands back the table as it left it (RunReport.Polled):
// /status shows that backlog and version at once, not the poll's of before
// the run until the next poll; the next poll, with the log unmoved since
// the run, still checks the triggers on it, as it would have on the run's
// own commit.
func TestTheBacklogIsTheOneTheRunLeftNotTheOneBeforeIt(t *testing.T) {
	clock := newFakeClock()
	before := Backlog{SmallFiles: 30, MergeableFiles: 30, Files: 31, DeletedRowsRatio: 0.4}
	left := Backlog{SmallFiles: 12, MergeableFiles: 12, Files: 13}
	run := &recordingRun{replies: []reply{{rep: RunReport{Committed: true, Version: 6, ReadVersion: 5,
		Polled: &PollResult{Version: 6, Changed: true, Backlog: &left}}}}}
	poll := &scriptedPoll{}
	poll.set(5, before)
	s := newTestScheduler(t, run, poll, clock, 1)
	p := testPolicy("t")
	p.Triggers.SmallFiles = 10
	s.Apply([]policies.Policy{p})
	eventually(t, "the first poll's run", func() bool { return statusOf(s, "t").LastRun != nil })
	st := statusOf(s, "t")
	if st.Backlog == nil || st.Backlog.MergeableFiles != 12 || st.Backlog.DeletedRowsRatio != 0 || st.LastVersion != 6 {
		t.Fatalf("after the run: backlog %+v at version %d; want the run's (12 mergeable, no DV) at 6", st.Backlog, st.LastVersion)
	}
	if n := poll.polls(); n != 1 {
		t.Fatalf("%d polls; the run's backlog needs none", n)
	}
	// The poll sees the run's commit (version 6) with the backlog the run
	// left, still over the trigger: another run, as before the report.
	poll.set(6, left)
	clock.Advance(time.Minute)
	eventually(t, "the poll after the run", func() bool { return poll.polls() == 2 })
	eventually(t, "the second run", func() bool { return run.count() == 2 })
	if st := statusOf(s, "t"); st.LastVersion != 6 || st.Backlog.MergeableFiles != 12 {
		t.Fatalf("after the second run: version %d backlog %+v", st.LastVersion, st.Backlog)
	}
	poll.mu.Lock()
	seen := poll.seen[1]
	poll.mu.Unlock()
	if seen != 6 {
		t.Errorf("the poll after the run read from version %d, want 6 (the run's commits are seen)", seen)
	}
}
