package daemon

import (
	"context"
	"runtime/debug"
	"time"
)

// The first poll of a table loads its whole snapshot; its next polls only
// ask whether a newer commit exists. At start (and after a reload that adds
// tables) the first polls of thousands of tables together make a peak of
// garbage, and the heap pages it freed stay resident: the runtime keeps
// free pages up to its next heap goal, twice the live heap. An idle fleet
// makes little garbage after that, so the daemon gives those pages back
// once, when the last first poll is over. GOGC and GOMEMLIMIT stay the
// operator's.

// releaseCheckEvery is how often the daemon looks whether the first
// polls are over (one atomic read).
const releaseCheckEvery = time.Second

// releaseAfterFirstPolls calls release each time the count of tables
// whose first poll is still to come (unpolled) falls to zero after it was
// above it, until ctx ends.
func releaseAfterFirstPolls(ctx context.Context, unpolled func() int, release func(), every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	pending := false
	for {
		n := unpolled()
		switch {
		case n > 0:
			pending = true
		case pending:
			pending = false
			release()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// freeOSMemory is what releaseAfterFirstPolls does in the daemon: a
// collection, and every free heap page returned to the system.
func (d *Daemon) freeOSMemory() {
	start := time.Now()
	debug.FreeOSMemory()
	d.log.Debug("first polls over: the memory their snapshot loads freed is returned to the system", "took", time.Since(start).Round(time.Millisecond))
}
