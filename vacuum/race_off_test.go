//go:build !race

package vacuum

// raceEnabled is true when the race detector instruments the tests.
const raceEnabled = false
