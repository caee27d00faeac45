package delta

import (
	"sync"
	"time"

	"github.com/compactord/compactord/delta/props"
)

// maxNewestTrust bounds how long HasNewer trusts a finding that a version
// was the newest, whatever the table's log retention: a retention lowered
// by a commit the caller has not seen yet cannot catch it out by more.
const maxNewestTrust = time.Hour

// newestSeen is what a table handle remembers of HasNewer's last finding:
// version was the newest at the time at. It is the whole per-table cost of
// a one-request poll.
type newestSeen struct {
	mu      sync.Mutex
	version int64
	at      time.Time // zero: nothing found yet
	// retention is the log retention of the newest snapshot loaded
	// through the handle (0: none loaded, the default's).
	retention time.Duration
}

// window is how long after a finding a missing next commit still proves
// that nothing newer exists: half the log retention, at most
// maxNewestTrust. A commit written after the finding was never old enough
// for log cleanup to delete within it.
func (n *newestSeen) window() time.Duration {
	r := n.retention
	if r <= 0 {
		r = props.DefaultLogRetention
	}
	return min(maxNewestTrust, r/2)
}

// trusted reports whether v was found the newest less than window before
// now (a clock that went back trusts nothing).
func (n *newestSeen) trusted(v int64, now time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.at.IsZero() || n.version != v || now.Before(n.at) {
		return false
	}
	return now.Sub(n.at) < n.window()
}

// found records that v was the newest version at now.
func (n *newestSeen) found(v int64, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.version, n.at = v, now
}

// loaded records a snapshot of the latest version: v was the newest when
// the log was listed at now, and the table's log retention is r.
func (n *newestSeen) loaded(v int64, now time.Time, r time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.version, n.at, n.retention = v, now, r
}

// clock is the handle's clock (tests replace it).
func (t *Table) clock() time.Time {
	if t.now != nil {
		return t.now()
	}
	return time.Now()
}
