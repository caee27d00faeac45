package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/compactord/compactord/scheduler/lease"
)

// LeaseRace has n replicas race to acquire the table's lease for `rounds`
// rounds; exactly one must hold it per round. The holder releases it at
// the end of each round, and a loser's Renew must fail.
func LeaseRace(t *testing.T, url string, n, rounds int) {
	ctx := context.Background()
	tbls := OpenN(t, url, n)
	ls := make([]*lease.Lease, n)
	for i := range ls {
		l, err := lease.New(tbls[i], fmt.Sprintf("replica-%d", i), lease.Options{TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		ls[i] = l
	}
	for round := 0; round < rounds; round++ {
		held := make([]bool, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range ls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				held[i], errs[i] = ls[i].Acquire(ctx)
			}()
		}
		close(start)
		wg.Wait()
		holder := -1
		for i := range ls {
			if errs[i] != nil {
				t.Fatalf("round %d: replica %d: %v", round, i, errs[i])
			}
			if held[i] {
				if holder >= 0 {
					t.Fatalf("round %d: replicas %d and %d both hold the lease", round, holder, i)
				}
				holder = i
			}
		}
		if holder < 0 {
			t.Fatalf("round %d: nobody holds the lease", round)
		}
		loser := (holder + 1) % n
		if err := ls[loser].Renew(ctx); err == nil {
			t.Fatalf("round %d: replica %d renewed a lease it does not hold", round, loser)
		}
		if err := ls[holder].Renew(ctx); err != nil {
			t.Fatalf("round %d: holder %d cannot renew: %v", round, holder, err)
		}
		if err := ls[holder].Release(ctx); err != nil {
			t.Fatalf("round %d: release: %v", round, err)
		}
	}
	t.Logf("%d rounds, %d replicas each: exactly one holder per round", rounds, n)
}
