package httpapi

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/scheduler"
)

func fleetTables() []scheduler.TableStatus {
	return []scheduler.TableStatus{
		{Name: "a", State: scheduler.StateRunning, Fleet: scheduler.FleetStatus{Quota: 0.5, UsedSeconds: 1350, QuotaOccupation: 0.75}},
		{Name: "b", State: scheduler.StateQueued, Fleet: scheduler.FleetStatus{Quota: 0.5, Queued: &scheduler.Queued{Position: 2, Score: 2, Priority: 3.5, Why: "all 1 workers are busy; 1 waiting tables go first"}}},
		{Name: "c", State: scheduler.StateQueued, Fleet: scheduler.FleetStatus{Quota: 0.5, QuotaOccupation: 1.25, Queued: &scheduler.Queued{Position: 1, Score: 4, Priority: 4}}},
	}
}

func TestMetricsShowTheQueueLengthEachTablesQueueScoreAndQuotaOccupation(t *testing.T) {
	h := metricsHandler("v", fleetTables, func() Counters { return Counters{} }, func(string) time.Duration { return 0 })
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		"compactord_queue_length 2\n",
		`compactord_table_queue_score{table="a"} 0` + "\n",
		`compactord_table_queue_score{table="b"} 3.5` + "\n",
		`compactord_table_quota_occupation{table="a"} 0.75` + "\n",
		`compactord_table_quota_occupation{table="c"} 1.25` + "\n",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestTheStatusQueueListsTheWaitingTablesNextFirst(t *testing.T) {
	q := queueOf(fleetTables())
	if len(q) != 2 || q[0].Table != "c" || q[1].Table != "b" || q[0].QuotaOccupation != 1.25 || q[1].Why == "" {
		t.Fatalf("queue = %+v", q)
	}
}
