package scheduler

// What a caller that looks at every table often (the web view's history,
// every two seconds) reads without copying each table's status: Status
// copies every table's counters, backlog and last run, which at ten
// thousand tables is megabytes of garbage per look.

// Sample is a table's backlog and last run as Samples hands them out.
// Both are shared with the scheduler, which replaces them when they change
// and never changes them in place: the caller must not change them either
// (copy what it keeps).
type Sample struct {
	// Name is the table's name (Spec.Name).
	Name string
	// Backlog is the backlog of the table's last poll (nil before one).
	Backlog *Backlog
	// LastRun is the table's last finished run (nil before one).
	LastRun *RunRecord
}

// Samples calls f with every table's sample, in no particular order. It
// allocates nothing per table. f must not call the scheduler.
func (s *Scheduler[P]) Samples(f func(Sample)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tables {
		t.mu.Lock()
		sm := Sample{Name: t.spec.Name, Backlog: t.backlog, LastRun: t.lastRun}
		t.mu.Unlock()
		f(sm)
	}
}

// Unpolled is how many tables have not yet finished their first poll
// (halted tables, which do not poll, are not counted). It falls to zero
// once the first polls after a start, or after a reload that added
// tables, are over: the daemon then gives back to the system the memory
// their full snapshot loads freed (daemon.releaseAfterFirstPolls).
func (s *Scheduler[P]) Unpolled() int { return int(s.unpolled.Load()) }

// firstPollOver marks t's first poll as over (it polled, halted or
// stopped); t.mu is held.
func (t *table[P]) firstPollOver() {
	if t.unpolled {
		t.unpolled = false
		t.s.unpolled.Add(-1)
	}
}
