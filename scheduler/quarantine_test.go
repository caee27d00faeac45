package scheduler

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/policies"
)

// memQuarantine is a QuarantineStore in memory, shared by the schedulers
// of a test as a table's stored list is shared by daemons.
type memQuarantine struct {
	mu    sync.Mutex
	lists map[string][]Quarantined
	saves int
}

func (m *memQuarantine) Load(_ context.Context, p policies.Policy) ([]Quarantined, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.lists[p.Name]), nil
}

func (m *memQuarantine) Save(_ context.Context, p policies.Policy, qs []Quarantined) ([]Quarantined, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.saves++
	if m.lists == nil {
		m.lists = map[string][]Quarantined{}
	}
	m.lists[p.Name] = slices.Clone(qs)
	return qs, nil
}

func (m *memQuarantine) stored(name string) []Quarantined {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.lists[name])
}

// A file reported missing is quarantined on the DefaultMissingRuns-th run
// in a row that misses it: a run failing for another reason in between
// neither counts nor resets, a successful run resets. The quarantine is
// stored, and a new scheduler over the same store (a restart) excludes the
// file from its very first run.
func TestAFileMissingForConsecutiveRunsIsQuarantinedStoredAndExcludedAfterARestart(t *testing.T) {
	missA := reply{rep: RunReport{Missing: []string{"a.parquet"}}, err: errors.New("rewrite: missing data file a.parquet")}
	throttled := reply{err: errors.New("store throttled")}
	ok := reply{rep: RunReport{Committed: true, Version: 3}}
	var replies []reply
	replies = append(replies, missA, missA, ok) // reset by the success
	for i := 0; i < DefaultMissingRuns-1; i++ {
		replies = append(replies, missA)
	}
	replies = append(replies, throttled, missA, ok)
	run := &recordingRun{replies: replies}
	store := &memQuarantine{}
	clock := newFakeClock()
	s := New(Config[policies.Policy]{Spec: policySpec, Same: samePolicy, Run: run.run, Poll: (&scriptedPoll{}).poll,
		Workers: 1, PollInterval: time.Hour, Clock: clock, Rand: func() float64 { return 0.5 }, Quarantine: store})
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	s.Apply([]policies.Policy{testPolicy("t")})
	for i := 0; i < len(replies)-1; i++ {
		n := run.count()
		if err := s.Trigger("t", ReasonAPI); err != nil {
			t.Fatal(err)
		}
		eventually(t, "a run", func() bool {
			st := statusOf(s, "t")
			return run.count() > n && st.LastRun != nil && st.State != StateRunning
		})
	}
	// The quarantining run is followed at once by a run without the file.
	eventually(t, "the run after the quarantine", func() bool { return run.count() == len(replies) })
	for i := 0; i < len(replies)-1; i++ {
		if run.call(i).Exclude["a.parquet"] {
			t.Fatalf("run %d excluded a.parquet before its %d-th miss in a row", i, DefaultMissingRuns)
		}
	}
	if !run.call(len(replies) - 1).Exclude["a.parquet"] {
		t.Fatalf("the run after the quarantine read a.parquet again")
	}
	st := statusOf(s, "t")
	if len(st.Quarantine) != 1 || st.Quarantine[0].Reason != QuarantineMissing || st.Counters.Runs[ResultQuarantine] != 1 {
		t.Fatalf("status quarantine %+v, runs %v", st.Quarantine, st.Counters.Runs)
	}
	if got := store.stored("t"); len(got) != 1 || got[0].Path != "a.parquet" || got[0].Reason != QuarantineMissing {
		t.Fatalf("stored %+v", got)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	run2 := &recordingRun{replies: []reply{ok}}
	s2 := New(Config[policies.Policy]{Spec: policySpec, Same: samePolicy, Run: run2.run, Poll: (&scriptedPoll{}).poll,
		Workers: 1, PollInterval: time.Hour, Clock: clock, Quarantine: store})
	t.Cleanup(func() { _ = s2.Shutdown(context.Background()) })
	s2.Apply([]policies.Policy{testPolicy("t")})
	eventually(t, "the stored list loaded", func() bool { return len(statusOf(s2, "t").Quarantine) == 1 })
	_ = s2.Trigger("t", ReasonAPI)
	eventually(t, "a run after the restart", func() bool { return run2.count() == 1 })
	if !run2.call(0).Exclude["a.parquet"] {
		t.Fatalf("the first run after the restart may read a.parquet")
	}
}

// A corrupt file is stored with its reason, and a table whose list would
// pass MaxQuarantined halts instead of growing it.
func TestACorruptFileIsStoredAndTooManyHaltTheTable(t *testing.T) {
	corrupt := func(p string) error {
		return &failure.CorruptFileError{Kind: failure.DataFile, Path: p, DataFile: p, Err: errors.New("bad footer")}
	}
	run := &recordingRun{replies: []reply{{err: corrupt("a.parquet")}, {err: corrupt("b.parquet")}, {err: corrupt("c.parquet")}}}
	store := &memQuarantine{}
	s := New(Config[policies.Policy]{Spec: policySpec, Same: samePolicy, Run: run.run, Poll: (&scriptedPoll{}).poll,
		Workers: 1, PollInterval: time.Hour, Clock: newFakeClock(), Quarantine: store, MaxQuarantined: 2})
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	s.Apply([]policies.Policy{testPolicy("t")})
	_ = s.Trigger("t", ReasonAPI)
	eventually(t, "the halt", func() bool { return statusOf(s, "t").Halted })
	st := statusOf(s, "t")
	if !strings.Contains(st.HaltReason, ErrTooManyQuarantined.Error()) {
		t.Fatalf("halt reason %q", st.HaltReason)
	}
	if got := store.stored("t"); len(got) != 2 || got[0].Reason != QuarantineCorrupt || got[0].Path != "a.parquet" || got[1].Path != "b.parquet" {
		t.Fatalf("stored %+v: want a and b, corrupt", got)
	}
}
