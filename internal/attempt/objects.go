package attempt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"gocloud.dev/gcerrors"
)

// Deleter deletes one object; *blob.Bucket implements it.
type Deleter interface {
	Delete(ctx context.Context, key string) error
}

// Objects is the set of objects written for one attempt. The zero value is
// ready to use; it is safe for concurrent use (jobs write in parallel).
type Objects struct {
	mu    sync.Mutex
	order []string        // keys in the order they were tracked
	kept  map[string]bool // keys that must never be deleted
	seen  map[string]bool
	// onTrack, when set, is told every newly tracked key before Track
	// returns (OnTrack).
	onTrack func(key string)
}

// OnTrack sets f to be called with every key Track records for the first
// time, before Track returns and so before the object is created: a worker
// process persists the keys there (an intent record), so that whoever
// cleans up after it is killed knows what it may have written. f runs on
// the tracking goroutine; jobs track concurrently, so f must be safe for
// concurrent use.
func (o *Objects) OnTrack(f func(key string)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.onTrack = f
}

// Track records key before the object is created, so that a write that
// fails half way (or whose outcome is unknown) is still cleaned up.
func (o *Objects) Track(key string) {
	o.mu.Lock()
	if o.seen == nil {
		o.seen = map[string]bool{}
	}
	fresh := !o.seen[key]
	if fresh {
		o.seen[key] = true
		o.order = append(o.order, key)
	}
	f := o.onTrack
	o.mu.Unlock()
	if fresh && f != nil {
		f(key)
	}
}

// Keep marks keys as published: a committed version references them (or
// may, when the put's outcome is unknown). Clean never deletes them.
func (o *Objects) Keep(keys ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.kept == nil {
		o.kept = map[string]bool{}
	}
	for _, k := range keys {
		o.kept[k] = true
	}
}

// Uncommitted returns the tracked keys not kept, in tracking order.
func (o *Objects) Uncommitted() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, k := range o.order {
		if !o.kept[k] {
			out = append(out, k)
		}
	}
	return out
}

// cleanTimeout bounds one Clean.
const cleanTimeout = time.Minute

// Clean deletes every uncommitted object (a missing one is fine: a write
// that never completed leaves nothing) and forgets it, so a second Clean
// deletes nothing. It runs on exit paths that a cancellation may have
// caused, so it ignores ctx's cancellation (keeping its values) and bounds
// itself instead. It returns how many keys it cleaned; the error joins
// every failed delete, each naming its key (those stay tracked).
func (o *Objects) Clean(ctx context.Context, d Deleter) (int, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanTimeout)
	defer cancel()
	keys := o.Uncommitted()
	var errs []error
	var failed []string
	for _, k := range keys {
		// d is the caller's: the table's deletion gate as Output in the
		// product (deletegate.EndAttempt), so this is its check too.
		if err := d.Delete(ctx, k); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			errs = append(errs, fmt.Errorf("delete uncommitted object %s: %w", k, err))
			failed = append(failed, k)
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	drop := map[string]bool{}
	for _, k := range keys {
		drop[k] = true
	}
	for _, k := range failed {
		delete(drop, k) // retried by a later Clean
	}
	rest := o.order[:0]
	for _, k := range o.order {
		if drop[k] {
			delete(o.seen, k)
			continue
		}
		rest = append(rest, k)
	}
	o.order = rest
	return len(keys) - len(failed), errors.Join(errs...)
}
