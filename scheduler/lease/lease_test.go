package lease

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

var stores = []struct {
	name string
	url  func(t *testing.T) string
}{
	{"mem", func(t *testing.T) string { return "mem://lease" }},
	{"file", func(t *testing.T) string { return "file://" + filepath.ToSlash(t.TempDir()) }},
}

func newLease(t *testing.T, tbl *delta.Table, holder string, clk *fakeClock) *Lease {
	t.Helper()
	cs, err := tbl.Conditional()
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(cs, tbl.URL, holder, Options{TTL: time.Minute, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLeaseLifecycle(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			ctx := context.Background()
			tbl := tabletest.Open(t, st.url(t))
			clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			a := newLease(t, tbl, "a", clk)
			b := newLease(t, tbl, "b", clk)

			if ok, err := a.Acquire(ctx); err != nil || !ok {
				t.Fatalf("a.Acquire on a free table = %v, %v; want true", ok, err)
			}
			if ok, err := b.Acquire(ctx); err != nil || ok {
				t.Fatalf("b.Acquire while a holds = %v, %v; want false", ok, err)
			}
			clk.Add(30 * time.Second)
			if err := a.Renew(ctx); err != nil {
				t.Fatalf("a.Renew: %v", err)
			}
			clk.Add(45 * time.Second) // 75s after acquire, 45s after renew
			if ok, err := b.Acquire(ctx); err != nil || ok {
				t.Fatalf("b.Acquire before the renewed expiry = %v, %v; want false", ok, err)
			}
			clk.Add(20 * time.Second) // renewed lease expired
			if a.Held() {
				t.Fatal("a.Held() after expiry")
			}
			if ok, err := b.Acquire(ctx); err != nil || !ok {
				t.Fatalf("b.Acquire after expiry = %v, %v; want true", ok, err)
			}
			if err := a.Renew(ctx); !errors.Is(err, ErrLost) {
				t.Fatalf("a.Renew after takeover = %v; want ErrLost", err)
			}
			if err := b.Release(ctx); err != nil {
				t.Fatalf("b.Release: %v", err)
			}
			if ok, err := a.Acquire(ctx); err != nil || !ok {
				t.Fatalf("a.Acquire after release = %v, %v; want true", ok, err)
			}
			if got := a.Record().Holder; got != "a" {
				t.Fatalf("holder = %q", got)
			}
		})
	}
}

func TestRacingAcquirersOneHolderPerRound(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			ctx := context.Background()
			tbl := tabletest.Open(t, st.url(t))
			clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			const n, rounds = 8, 25
			ls := make([]*Lease, n)
			for i := range ls {
				ls[i] = newLease(t, tbl, "r"+string(rune('a'+i)), clk)
			}
			for round := 0; round < rounds; round++ {
				held := make([]bool, n)
				errs := make([]error, n)
				testutil.AtOnce(n, func(i int) { held[i], errs[i] = ls[i].Acquire(ctx) })
				winners := 0
				for i := range ls {
					if errs[i] != nil {
						t.Fatalf("round %d: acquirer %d: %v", round, i, errs[i])
					}
					if held[i] {
						winners++
					}
				}
				if winners != 1 {
					t.Fatalf("round %d: %d holders, want exactly 1", round, winners)
				}
				// Alternate between releasing and letting it expire.
				if round%2 == 0 {
					for i := range ls {
						if held[i] {
							if err := ls[i].Release(ctx); err != nil {
								t.Fatal(err)
							}
						}
					}
				} else {
					clk.Add(2 * time.Minute)
				}
			}
		})
	}
}
