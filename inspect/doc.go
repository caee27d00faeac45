// Package inspect reports on one snapshot of a Delta table: files, rows,
// the size histogram, small files (by the planner's rule), partitions,
// clustering, row tracking, protocol and features, and whether compactord
// may rewrite it. `compactord inspect` prints the report (text or JSON) and
// the daemon's table page draws its charts from it.
//
// It owns the report's types (their JSON is the `inspect --json` contract),
// Build (pure, over a snapshot), Load and CountFooterRows (the reads), and
// the text form. It must not write to a table, know policies beyond the
// planner's default, or import anything of the daemon (scheduler, runner,
// HTTP).
package inspect
