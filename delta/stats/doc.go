// Package stats owns the per-file statistics of an add action as the log
// holds them: the Stats type, ParseStats, and the quick numRecords check
// (ScanStats, QuickScanStats, StatsShape) log replay runs over every add.
//
// It must not know about actions (actions.Add carries a *Stats, so this
// package sits below delta/actions), the log, or how statistics are
// computed from data (delta/statscollect); it imports nothing of ours.
package stats
