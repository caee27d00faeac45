package main

import (
	"math/rand/v2"
	"testing"

	"github.com/compactord/compactord/planner"
)

// Three files tile ts ([0, 999], [1000, 1999], [2000, 2999]) and each
// spans the whole key range: a 1% range on ts overlaps one file, or two at
// a boundary; a range on key overlaps all three.
func TestPruningCountsTheFilesARangePredicateCannotSkip(t *testing.T) {
	tb := newTable(config{rowBytes: 100, queries: 200})
	for f := int64(0); f < 3; f++ {
		tb.addFile([]row{{ts: f * 1000, key: 0}, {ts: f*1000 + 999, key: 1_000_000}}, 0, nil, "")
	}
	got, err := tb.pruning(rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if ts := got[0]; ts.files < 1 || ts.files > 1.2 || ts.frac != ts.files/3 {
		t.Errorf("ts predicates read %.3f files (%.3f of them), want between 1 and 1.2 (one file, two at a boundary)", ts.files, ts.frac)
	}
	if key := got[1]; key.files != 3 || key.frac != 1 {
		t.Errorf("key predicates read %.3f files (%.3f of them), want all 3", key.files, key.frac)
	}
}

// Re-clustering every run rewrites every file on every run (OPTIMIZE FULL),
// so its bytes are the table's size summed over the runs, and its files
// are Z-cube outputs.
func TestReclusterEveryRunRewritesTheWholeTableOnEveryRun(t *testing.T) {
	cfg := config{batches: 40, batchRows: 50, every: 10, rowBytes: 100, target: 4 << 10, minFile: 4 << 10,
		maxUnclustered: 40 << 10, minCube: 400 << 10, queries: 10, measureEvery: 1, rangeBuckets: 100, lateBatches: 5,
		lateFraction: 0.05, seed: 1, cubeMergeMin: planner.DefaultCubeMergeMinCubes}
	r, err := simulate(armOf("full"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	batch := int64(cfg.batchRows) * cfg.rowBytes
	var want int64
	for run := int64(1); run <= 4; run++ {
		want += run * int64(cfg.every) * batch
	}
	if r.runs != 4 || r.rewritten != want {
		t.Errorf("%d runs rewrote %d bytes, want 4 runs rewriting %d", r.runs, r.rewritten, want)
	}
	if r.jobs[planner.StrategyZCube] == 0 || r.jobs[planner.StrategyBinpack] != 0 {
		t.Errorf("jobs %v, want zcube jobs only", r.jobs)
	}
}
