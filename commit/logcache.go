package commit

import (
	"context"
	"sync"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
)

// LogCache keeps the actions of the versions the transactions of one run
// read while catching up, and of those they committed, for the run's later
// transactions against the same read snapshot (partial-progress batches):
// a published version never changes, so each is read from the store at
// most once per run instead of once per batch. The zero value is ready;
// it is safe for concurrent use. The cached actions are shared: a
// transaction must not modify the actions it observes.
type LogCache struct {
	mu       sync.Mutex
	versions map[int64][]actions.Action
}

// get returns the cached actions of version v; a nil cache has none.
func (c *LogCache) get(v int64) ([]actions.Action, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	acts, ok := c.versions[v]
	return acts, ok
}

// put caches the actions of published version v (a nil cache drops them).
func (c *LogCache) put(v int64, acts []actions.Action) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.versions == nil {
		c.versions = map[int64][]actions.Action{}
	}
	c.versions[v] = acts
}

// readCached is readCommit through c: a cached version is not read again,
// and a version read is cached.
func (c *LogCache) readCached(ctx context.Context, t *delta.Table, v int64) ([]actions.Action, bool, error) {
	if acts, ok := c.get(v); ok {
		return acts, true, nil
	}
	acts, found, err := readCommit(ctx, t, v)
	if err == nil && found {
		c.put(v, acts)
	}
	return acts, found, err
}
