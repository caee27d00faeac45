//go:build race

package vacuum

// raceEnabled is true when the race detector instruments the tests, which
// makes the scale tests several times slower: they then run smaller.
const raceEnabled = true
