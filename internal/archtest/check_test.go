package archtest

import (
	"slices"
	"strings"
	"testing"
)

// The check itself, on a small table and build: each kind of drift is
// reported once, naming the row and the column to change, and what agrees
// is not reported.
func TestTheCheckNamesTheRowAndColumnOfEachDrift(t *testing.T) {
	table := "# A\n\nprose\n\n" +
		"| package | layer | owns | must not | imports | departs |\n" +
		"|---|---|---|---|---|---|\n" +
		"| `a/` | 0 | leaf | — | — (stdlib only) | — |\n" +
		"| `b/` | 1 | b | — | a | — |\n" +
		"| `c/` | 1 | c | — | a, b | — |\n" +
		"| `f/` | 2 | f | — | a | — |\n" +
		"| `gone/` | 0 | moved | — | — | — |\n" +
		"| `tools/js/` | 0 | scripts | — | a | — |\n" +
		"| `x/`, `y/` | 0 | two | — | — | — |\n" +
		"\nmore prose | with a bar\n"
	rows, probs, err := readTable(strings.NewReader(table))
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]pkg{
		"a": {goFiles: 1},
		"b": {goFiles: 1, imports: []string{"a"}},
		"c": {goFiles: 1, imports: []string{"a", "b"}},
		"d": {goFiles: 1, imports: []string{"a"}},
		"e": {goFiles: 0}, // tests only
		"f": {goFiles: 1, imports: []string{"a", "b"}},
	}
	probs = append(probs, problems(rows, pkgs, func(dir string) bool { return dir == "tools/js" })...)
	want := []string{
		"ARCHITECTURE.md:13: row `x/`, `y/`, column package: name one package in backquotes (`dir/`), one row per package",
		"ARCHITECTURE.md: package d has no row in the package table: add a row | `d/` | layer | owns | must not | a | departs |",
		"ARCHITECTURE.md:11: row `gone/` names no package of the module and no directory: remove the row or correct its package cell",
		"ARCHITECTURE.md:12: row `tools/js/`, column imports: tools/js holds no Go package, so it imports none of ours: make the column read —",
		"ARCHITECTURE.md:10: row `f/`, column imports: add b (imported by the code); it should read: a, b",
		"ARCHITECTURE.md:9: row `c/`, column layer: c (layer 1) imports b (layer 1), and a package may import only packages of lower layers: remove the import, or give c a layer above 1 (layers that hold with every arrow of the build: `c/` 1→2)",
	}
	for _, w := range want {
		if !slices.Contains(probs, w) {
			t.Errorf("missing problem:\n  %s", w)
		}
	}
	for _, p := range probs {
		if !slices.Contains(want, p) {
			t.Errorf("unexpected problem:\n  %s", p)
		}
	}
}
