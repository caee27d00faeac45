package vacuum

import (
	"sync"

	"gocloud.dev/blob"

	"github.com/compactord/compactord/internal/testutil"
)

// countingStore forwards every call to a real bucket and counts it: LIST
// calls by prefix and delimiter, other calls by kind.
type countingStore struct {
	mu    sync.Mutex
	lists map[string]int // "prefix|delimiter" -> pages listed
	calls map[string]int // "get", "put", "delete", "attributes", "copy"
}

func newCountingStore(inner *blob.Bucket) (*countingStore, *blob.Bucket) {
	c := &countingStore{lists: map[string]int{}, calls: map[string]int{}}
	f := &testutil.Forward{Inner: inner, OnCall: func(kind, key string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if kind == "list" {
			c.lists[key]++
			return
		}
		c.calls[kind]++
	}}
	return c, f.Bucket()
}

func (c *countingStore) snapshot() (lists, calls map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lists, calls = map[string]int{}, map[string]int{}
	for k, v := range c.lists {
		lists[k] = v
	}
	for k, v := range c.calls {
		calls[k] = v
	}
	return lists, calls
}
