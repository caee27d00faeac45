package runner

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/testutil/stores"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/scheduler"
)

// opCall is one RunFunc call of the daemon under test, with the span of the
// store's read log it covers.
type opCall struct {
	op         string
	err        error
	start, end int // indexes into FakeS3.Reads
}

// A data file of a table on an object store is corrupted (its bytes
// replaced by as many zeros: the store serves it, parquet refuses it). The
// daemon's compaction fails on it, quarantines it from the error alone, and
// its immediate retry compacts the rest of the table. From the failed read
// of the corrupt file to the retry nothing is read: no re-plan, no second
// pass over the sources to find the bad one (the store logs every GET and
// LIST).
func TestACorruptDataFileIsQuarantinedFromItsErrorAndTheRestCompactsWithoutRereading(t *testing.T) {
	stores.FakeS3Credentials(t)
	ctx := context.Background()
	f := stores.NewFakeS3(t, stores.FakeS3Options{})
	const prefix = "quarantine"
	tbl := tabletest.NewTable(t, f.URL(prefix), tabletest.IDRange(0, 10), tabletest.IDRange(10, 10), tabletest.IDRange(20, 10),
		tabletest.IDRange(30, 10), tabletest.IDRange(40, 10), tabletest.IDRange(50, 10))
	snap := tabletest.Latest(t, tbl)
	bad := snap.Files[2]
	badKey, err := bad.Key()
	if err != nil {
		t.Fatal(err)
	}
	badIDs := tabletest.FileIDs(t, tbl, bad)
	if err := tbl.Bucket.WriteAll(ctx, badKey, make([]byte, bad.Size), nil); err != nil {
		t.Fatal(err)
	}
	storeKey := prefix + "/" + badKey

	b := &Backend{Tables: NewTables()}
	defer b.Tables.Close()
	var (
		mu    sync.Mutex
		calls []opCall
	)
	run := func(ctx context.Context, req scheduler.RunRequest[policies.Policy]) (scheduler.RunReport, error) {
		start := len(f.Reads())
		rep, err := b.Run(ctx, req)
		mu.Lock()
		calls = append(calls, opCall{op: req.Op, err: err, start: start, end: len(f.Reads())})
		mu.Unlock()
		return rep, err
	}
	s := scheduler.New(scheduler.Config[policies.Policy]{Spec: b.Spec, Same: SamePolicy, Run: run, Poll: b.Poll, Workers: 1, PollInterval: time.Hour})
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	p := testPolicy("q")
	p.URL = tbl.URL
	p.SettleWindow = 0
	s.Apply([]policies.Policy{p})
	if err := s.Trigger("q", scheduler.ReasonAPI); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		st := s.Status()[0]
		if st.LastRun != nil && st.LastRun.Result == scheduler.ResultCommitted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no committed run: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	st := s.Status()[0]
	if !slices.Equal(st.Quarantined, []string{bad.Path}) || st.Counters.Runs[scheduler.ResultQuarantine] != 1 {
		t.Fatalf("quarantined %v, runs %v: want %s quarantined by one run", st.Quarantined, st.Counters.Runs, bad.Path)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(calls) < 2 || calls[0].op != compaction.Name || failure.Of(calls[0].err) != failure.Quarantine ||
		calls[1].op != compaction.Name || calls[1].err != nil {
		t.Fatalf("calls %+v: want a quarantined compaction, then one that commits", calls)
	}
	reads := f.Reads()
	failed := reads[calls[0].start:calls[0].end]
	last := -1
	for i, k := range failed {
		if k == storeKey {
			last = i
		}
	}
	if last < 0 {
		t.Fatalf("the failed run never read %s: %v", storeKey, failed)
	}
	if after := failed[last+1:]; len(after) != 0 {
		t.Errorf("%d reads after the corrupt file failed: %v", len(after), after)
	}
	if between := reads[calls[0].end:calls[1].start]; len(between) != 0 {
		t.Errorf("%d reads between the failed run and its retry: %v", len(between), between)
	}
	if slices.Contains(reads[calls[0].end:], storeKey) {
		t.Errorf("the quarantined file was read again")
	}

	// The rest of the table is one file now; the corrupt one stays as it was.
	tabletest.WantTheRestInOneFile(t, tbl, bad.Path, tabletest.IDRange(0, 60), badIDs)
}
