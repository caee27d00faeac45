package runner

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/internal/progress"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/retention"
	"github.com/compactord/compactord/scheduler"
)

// The scheduler's progress callback reaches the operations the daemon
// runs: each reports its phase from none done to all done.
func TestTheDaemonsOperationsReportProgressToTheScheduler(t *testing.T) {
	ctx := context.Background()
	tbl, _ := tabletest.NewDayTable(t, []int{0, 0, 1, 1, 2, 2, 30, 30})
	now := time.Date(2026, 1, 31, 12, 0, 0, 0, time.UTC)
	b := &Backend{Tables: NewTables(), Now: func() time.Time { return now }}
	defer b.Tables.Close()
	p := testPolicy("days")
	p.URL = tbl.URL
	p.SettleWindow = 0
	p.Retention = &policies.Retention{Column: "day", OlderThan: 29 * 24 * time.Hour}
	for _, c := range []struct {
		op, phase string
		files     int64
	}{
		{compaction.Name, "rewrite", 8}, // four days of two small files each
		{retention.Name, "scan", 4},     // the four compacted files
	} {
		var mu sync.Mutex
		var got []progress.Progress
		req := scheduler.RunRequest[policies.Policy]{Table: "days", Op: c.op, Policy: p, Progress: func(pr progress.Progress) {
			mu.Lock()
			got = append(got, pr)
			mu.Unlock()
		}}
		if _, err := b.Run(ctx, req); err != nil {
			t.Fatal(err)
		}
		if len(got) < 2 {
			t.Fatalf("%s: progress %+v", c.op, got)
		}
		first, last := got[0], got[len(got)-1]
		if first.Op != c.op || first.Phase != c.phase || first.Files != 0 || first.FilesTotal != c.files || first.BytesTotal <= 0 ||
			last.Files != c.files || last.Bytes != last.BytesTotal || !first.Started.Equal(now) {
			t.Errorf("%s: first %+v, last %+v", c.op, first, last)
		}
	}
}
