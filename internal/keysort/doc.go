// Package keysort sorts the fixed-width entries of a sorted rewrite's
// column path (a row's curve key, its ordinal in read order, its source)
// on every core: an LSD radix sort per share, then parallel pairwise
// merges; and runs a function over ranges of rows in parallel.
//
// It owns only the ordering of entries in memory. It must not read or
// write files, know parquet or Delta, or decide what the keys mean: the
// writer computes keys and gathers columns by the order it returns.
package keysort
