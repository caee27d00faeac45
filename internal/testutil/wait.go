package testutil

import (
	"testing"
	"time"
)

// WaitFor checks cond every interval until it holds, and fails the test
// when it still does not after within; what names the awaited state in
// the failure. It bounds how long a test waits for another goroutine or
// process, and asserts nothing about how long that took.
func WaitFor(t testing.TB, within, every time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(every)
	}
}
