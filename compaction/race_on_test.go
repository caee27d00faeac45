//go:build race

package compaction

// raceEnabled is true when the race detector instruments the tests, which
// makes the stress test several times slower: it then runs fewer operations.
const raceEnabled = true
