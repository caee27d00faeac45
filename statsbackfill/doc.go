// Package statsbackfill owns the statistics backfill table operation: the
// live files of a Delta table that have no statistics, or fewer indexed
// columns than delta.dataSkippingNumIndexedCols /
// delta.dataSkippingStatsColumns now ask for, get their statistics computed
// from their rows with the writer's collector (statscollect.StatsCollector) and
// are re-added unchanged but for the stats, with dataChange=false, in one
// "COMPUTE STATS" commit, as Spark's StatisticsCollection.recompute does.
// Unlike Spark it also handles files with deletion vectors: their stats
// cover every physical row and say tightBounds=false.
//
// It must not rewrite, move or delete data files, change any other field of
// an add action, or schedule anything.
package statsbackfill
