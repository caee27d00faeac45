package scheduler

import (
	"container/heap"
	"sync"
	"time"
)

// The wheel decides which table is due next. An idle table is one entry of
// a heap ordered by the time it is due (its next poll, cron time, retry or
// halt check): it has no goroutine and no timer of its own. One goroutine
// (dispatch) sleeps on one timer for the earliest entry and hands the due
// tables to Config.PollConcurrency poll workers; a worker that finds a run
// to do hands the table to a goroutine of the run's own (runs wait in the
// fleet queue for as long as they must, which a poll worker must not), and
// that goroutine gives the table back to the wheel when the run is over.
//
// A table is worked by at most one goroutine at a time (table.busy), which
// keeps runs single-flight per table. Events (Trigger, PollNow, Resume)
// set what they ask for on the table and, when no goroutine works it, move
// it to the front of the heap: an urgent entry goes before every entry
// merely due, so that a change event is not queued behind a backlog of
// periodic polls.

// wheel is the heap of the tables not being worked, by when they are due.
type wheel[P any] struct {
	mu    sync.Mutex
	h     tableHeap[P]
	seq   uint64
	kick  chan struct{} // one slot: the heap's front changed
	armed bool          // dispatch sleeps on a timer for the front entry (tests read it)
}

func newWheel[P any]() *wheel[P] {
	return &wheel[P]{kick: make(chan struct{}, 1)}
}

// push puts t in the heap, due at due (urgent: before every entry that is
// not). A table already there keeps the earlier of its two times, and
// stays urgent if it was: a push never delays a table.
func (w *wheel[P]) push(t *table[P], due time.Time, urgent bool) {
	w.mu.Lock()
	front := false
	if t.hidx >= 0 {
		changed := false
		if urgent && !t.urgent {
			t.urgent, changed = true, true
		}
		if due.Before(t.due) {
			t.due, changed = due, true
		}
		if changed {
			heap.Fix(&w.h, t.hidx)
		}
		front = changed && w.h[0] == t
	} else {
		w.seq++
		t.due, t.urgent, t.hseq = due, urgent, w.seq
		heap.Push(&w.h, t)
		front = w.h[0] == t
	}
	w.mu.Unlock()
	if front {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

// remove takes t out of the heap, if it is there.
func (w *wheel[P]) remove(t *table[P]) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t.hidx >= 0 {
		heap.Remove(&w.h, t.hidx)
	}
}

// next pops the front entry when it is urgent or due at now. Otherwise it
// returns how long until the front entry is due, or a negative duration
// when the heap is empty.
func (w *wheel[P]) next(now time.Time) (*table[P], time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.h) == 0 {
		return nil, -1
	}
	t := w.h[0]
	if !t.urgent && t.due.After(now) {
		return nil, t.due.Sub(now)
	}
	heap.Pop(&w.h)
	t.urgent = false
	return t, 0
}

// setArmed records whether dispatch sleeps on the front entry's timer.
func (w *wheel[P]) setArmed(armed bool) {
	w.mu.Lock()
	w.armed = armed
	w.mu.Unlock()
}

// tableHeap orders tables by urgency, then due time, then arrival.
type tableHeap[P any] []*table[P]

func (h tableHeap[P]) Len() int { return len(h) }
func (h tableHeap[P]) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.urgent != b.urgent {
		return a.urgent
	}
	if !a.due.Equal(b.due) {
		return a.due.Before(b.due)
	}
	return a.hseq < b.hseq
}
func (h tableHeap[P]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hidx, h[j].hidx = i, j
}
func (h *tableHeap[P]) Push(x any) {
	t := x.(*table[P])
	t.hidx = len(*h)
	*h = append(*h, t)
}
func (h *tableHeap[P]) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.hidx = -1
	return t
}

// dispatch hands the due tables of the wheel to the poll workers (ready)
// until the scheduler stops; it is the only goroutine that sleeps for
// idle tables.
func (s *Scheduler[P]) dispatch() {
	defer s.wg.Done()
	w := s.wheel
	for {
		select {
		case <-s.stopping:
			return
		default:
		}
		now := s.cfg.Clock.Now()
		t, wait := w.next(now)
		if t != nil {
			if !t.claim() {
				continue // a goroutine works it already, or it stopped
			}
			select {
			case s.ready <- t:
			case <-s.stopping:
				t.exit()
				return
			}
			continue
		}
		var timer Timer
		var fire <-chan time.Time
		if wait >= 0 {
			timer = s.cfg.Clock.NewTimer(wait)
			if s.cfg.Clock.Now().Sub(now) > time.Millisecond {
				// The clock jumped while the timer was made (a test's
				// clock, a stalled process): it would fire late.
				timer.Stop()
				continue
			}
			fire = timer.C()
			w.setArmed(true)
		}
		select {
		case <-fire:
		case <-w.kick:
		case <-s.stopping:
		}
		if timer != nil {
			w.setArmed(false)
			timer.Stop()
		}
	}
}

// pollWorker works the tables dispatch hands it until the scheduler stops.
func (s *Scheduler[P]) pollWorker() {
	defer s.wg.Done()
	for {
		select {
		case t := <-s.ready:
			t.work(true)
		case <-s.stopping:
			return
		}
	}
}

// startWheel starts dispatch and the poll workers, once.
func (s *Scheduler[P]) startWheel() {
	s.wheelOnce.Do(func() {
		s.wg.Add(1 + s.cfg.PollConcurrency)
		go s.dispatch()
		for range s.cfg.PollConcurrency {
			go s.pollWorker()
		}
	})
}
