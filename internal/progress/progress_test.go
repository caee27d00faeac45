package progress

import (
	"sync"
	"testing"
	"time"
)

func TestATrackerReportsTheStartAndEveryChangeWithinItsTotals(t *testing.T) {
	var got []Progress
	now := time.Unix(1_700_000_000, 0)
	tr := Start(func(p Progress) { got = append(got, p) }, "vacuum", "delete", 3, 300, now)
	tr.Add(1, 100)
	tr.Set(1, 100) // unchanged: not reported
	tr.Add(0, 0)   // nothing: not reported
	tr.Set(2, 250)
	tr.Add(5, 500) // clamped to the totals
	want := []Progress{
		{Op: "vacuum", Phase: "delete", FilesTotal: 3, BytesTotal: 300, Started: now},
		{Op: "vacuum", Phase: "delete", Files: 1, Bytes: 100, FilesTotal: 3, BytesTotal: 300, Started: now},
		{Op: "vacuum", Phase: "delete", Files: 2, Bytes: 250, FilesTotal: 3, BytesTotal: 300, Started: now},
		{Op: "vacuum", Phase: "delete", Files: 3, Bytes: 300, FilesTotal: 3, BytesTotal: 300, Started: now},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d reports %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("report %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if f := got[2].Fraction(); f != 250.0/300 {
		t.Errorf("fraction %v", f)
	}
}

func TestANilTrackerDoesNothing(t *testing.T) {
	tr := Start(nil, "compaction", "rewrite", 1, 1, time.Time{})
	if tr != nil {
		t.Fatal("a nil Func gave a tracker")
	}
	tr.Add(1, 1)
	tr.Set(1, 1)
	if p := tr.Progress(); p != (Progress{}) {
		t.Errorf("progress %+v", p)
	}
}

func TestConcurrentAddsAreCountedOnceEach(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	tr := Start(func(Progress) { mu.Lock(); calls++; mu.Unlock() }, "compaction", "rewrite", 0, 0, time.Time{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				tr.Add(1, 10)
			}
		}()
	}
	wg.Wait()
	if p := tr.Progress(); p.Files != 800 || p.Bytes != 8000 || calls != 801 {
		t.Errorf("progress %+v after %d calls, want 800 files, 8000 bytes, 801 calls", p, calls)
	}
}
