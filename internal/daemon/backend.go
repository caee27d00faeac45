package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/compactord/compactord/clusteradvise"
	"github.com/compactord/compactord/inspect"
	"github.com/compactord/compactord/internal/redact"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/runner"
)

// RunnerBackend is the Backend of Delta tables: polls, runs and plans go
// through db (the same Compact and PlanTable the CLI uses), the table page
// inspects through db's table handles.
func RunnerBackend(db *runner.Backend) Backend {
	return Backend{
		Run:  db.Run,
		Spec: db.Spec,
		Poll: db.Poll,
		Plan: func(ctx context.Context, p policies.Policy, exclude map[string]bool) (any, error) {
			return db.Plan(ctx, p, exclude)
		},
		Inspect: func(ctx context.Context, p policies.Policy) (*inspect.Report, error) {
			t, err := db.Tables.Get(ctx, p.URL)
			if err != nil {
				return nil, redact.Error(fmt.Errorf("table %s: %w", p.Name, err))
			}
			rep, _, err := inspect.Load(ctx, t, -1, -1)
			return rep, redact.Error(err)
		},
		Predicates: func(ctx context.Context, p policies.Policy, batch []clusteradvise.Pushed) (int, error) {
			t, err := db.Tables.Get(ctx, p.URL)
			if err != nil {
				return 0, redact.Error(fmt.Errorf("table %s: open %s: %w", p.Name, p.URL, err))
			}
			rec, err := clusteradvise.RecordPushed(ctx, t, batch, time.Now())
			if err != nil {
				return 0, redact.Error(err)
			}
			return len(rec.Entries), nil
		},
		Retain:     func(ps []policies.Policy) { _ = db.Tables.Retain(ps) },
		Close:      db.Tables.Close,
		Quarantine: db.QuarantineStore(),
		Halts:      db.HaltStore(),
	}
}
