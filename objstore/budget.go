package objstore

import (
	"context"
	"errors"
	"sync/atomic"
)

// DefaultRunBudget is the retry budget the commands and the daemon give
// one run: far more than a healthy store needs (a run at 5% faults on a
// table of a few hundred files retries a few dozen times), few enough that
// a store failing most requests ends the run instead of stretching it by
// hours of backoff.
const DefaultRunBudget = 1000

// ErrBudgetExhausted is wrapped by the error of a call that was not retried
// because its run's retry budget was used up.
var ErrBudgetExhausted = errors.New("retry budget of the run exhausted")

// Budget is a run's allowance of retries, shared by every call of the run
// (including concurrent ones). Attach it to the run's context with
// WithBudget; calls whose context carries none are bounded by
// Options.MaxAttempts only.
type Budget struct {
	left atomic.Int64
	used atomic.Int64
}

// NewBudget returns a budget of n retries.
func NewBudget(n int) *Budget {
	b := &Budget{}
	b.left.Store(int64(n))
	return b
}

// take spends one retry; false when none is left.
func (b *Budget) take() bool {
	if b == nil {
		return true
	}
	if b.left.Add(-1) < 0 {
		b.left.Add(1)
		return false
	}
	b.used.Add(1)
	return true
}

// Take spends one retry for a retry loop above a single call (a rewrite
// job run again after a transient store failure); false when none is left.
// A nil budget is unbounded.
func (b *Budget) Take() bool { return b.take() }

// Used is how many retries the run has spent.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

type budgetKey struct{}

// WithBudget returns ctx carrying b: every wrapped-bucket call made with
// the returned context (or one derived from it) spends its retries from b.
func WithBudget(ctx context.Context, b *Budget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

// BudgetFrom returns the budget ctx carries, or nil.
func BudgetFrom(ctx context.Context) *Budget {
	b, _ := ctx.Value(budgetKey{}).(*Budget)
	return b
}
