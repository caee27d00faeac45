// Package statscollect owns computing per-file statistics from the rows or
// pages of a parquet file being written (StatsCollector) under Delta's
// rules: which columns are indexed (dataSkippingNumIndexedCols,
// dataSkippingStatsColumns), string truncation, decimal and timestamp
// formatting, tightBounds.
//
// It is apart from delta/stats because it reads a Metadata and a Protocol
// (delta/actions), which themselves carry delta/stats' Stats. It must not
// read or write objects or the log; it imports delta/actions, delta/props
// and delta/schema.
package statscollect
