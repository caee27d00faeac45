package daemon

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// The memory of the first polls is given back once each time they are
// over: after the start, and after a reload that added tables; not while
// they last, and not again while nothing new polls.
func TestReleaseAfterFirstPollsReleasesOnceEachTimeTheFirstPollsAreOver(t *testing.T) {
	var unpolled atomic.Int64
	looked := make(chan int64)
	released := make(chan struct{}, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go releaseAfterFirstPolls(ctx, func() int {
		n := unpolled.Load()
		looked <- n
		return int(n)
	}, func() { released <- struct{}{} }, time.Millisecond)
	// look lets the loop look n times (the count it sees is the one set).
	look := func(n int) {
		for range n {
			<-looked
		}
	}
	want := func(n int) {
		t.Helper()
		if got := len(released); got != n {
			t.Fatalf("released %d times, want %d", got, n)
		}
	}
	look(3) // no tables yet: nothing to release
	unpolled.Store(3)
	look(3)
	want(0)
	unpolled.Store(0)
	look(4) // the look that sees 0 releases; the next ones do not
	want(1)
	unpolled.Store(2) // a reload added two tables
	look(2)
	unpolled.Store(0)
	look(3)
	want(2)
}
