package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/stores"

	"github.com/compactord/compactord/objstore"
	"github.com/compactord/compactord/scheduler/lease"
)

// LeaseRace has n replicas race to acquire the table's lease for `rounds`
// rounds; exactly one must hold it per round. The holder releases it at
// the end of each round, and a loser's Renew must fail.
func LeaseRace(t *testing.T, url string, n, rounds int) {
	ctx := context.Background()
	tbls := stores.OpenN(t, url, n)
	ls := make([]*lease.Lease, n)
	for i := range ls {
		cs, err := tbls[i].Conditional()
		if err != nil {
			t.Fatal(err)
		}
		l, err := lease.New(cs, tbls[i].URL, fmt.Sprintf("replica-%d", i), lease.Options{TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		ls[i] = l
	}
	for round := 0; round < rounds; round++ {
		held := make([]bool, n)
		errs := make([]error, n)
		testutil.AtOnce(n, func(i int) { held[i], errs[i] = ls[i].Acquire(ctx) })
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

// StaleCAS checks the store's compare-and-swap directly: a create of an
// existing key and a replace with a version that is no longer current must
// both be refused, and a replace with the current version must succeed.
func StaleCAS(t *testing.T, url string) {
	ctx := context.Background()
	tbls := stores.OpenN(t, url, 2)
	const key = "_compactord/cas-check"
	a, err := tbls[0].Conditional()
	if err != nil {
		t.Fatal(err)
	}
	b, err := tbls[1].Conditional()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.CreateIfAbsent(ctx, key, []byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateIfAbsent(ctx, key, []byte(`{"n":2}`)); !errors.Is(err, objstore.ErrPreconditionFailed) {
		t.Fatalf("create of an existing key = %v, want ErrPreconditionFailed", err)
	}
	_, v1, err := a.ReadVersioned(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	_, v1b, err := b.ReadVersioned(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if v1 != v1b {
		t.Fatalf("two readers of one version got tokens %q and %q", v1, v1b)
	}
	if err := a.ReplaceIfMatch(ctx, key, []byte(`{"n":3}`), v1); err != nil {
		t.Fatalf("replace with the current version: %v", err)
	}
	if err := b.ReplaceIfMatch(ctx, key, []byte(`{"n":4}`), v1b); !errors.Is(err, objstore.ErrPreconditionFailed) {
		t.Fatalf("replace with a stale version = %v, want ErrPreconditionFailed", err)
	}
	got, v2, err := b.ReadVersioned(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"n":3}` || v2 == v1 {
		t.Fatalf("after the refused replace: %s (version %q, was %q); want the first replace's body under a new version", got, v2, v1)
	}
}
