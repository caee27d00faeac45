//go:build !race

package compaction

// raceEnabled is true when the race detector instruments the tests.
const raceEnabled = false
