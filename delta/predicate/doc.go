// Package predicate is compactord's small expression type for read and
// delete predicates: comparisons, AND/OR/NOT, IN and IS [NOT] NULL over
// columns. An expression is evaluated two ways that must agree:
//
//   - on rows (EvalRow), with SQL three-valued logic: a row matches only when
//     the predicate is TRUE;
//   - on a file's statistics (MayMatch), answering "could any live row of
//     this file match?". It answers false only when the statistics prove it;
//     missing statistics, non-tight bounds used as outer bounds, and unknown
//     types all answer true. Conflict-time data skipping depends on this
//     one-way safety (DESIGN invariant 4).
//
// It must not do I/O.
package predicate
