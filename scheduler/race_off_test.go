//go:build !race

package scheduler

// raceEnabled is true when the race detector instruments the tests.
const raceEnabled = false
