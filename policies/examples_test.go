package policies

import (
	"path/filepath"
	"testing"
)

func TestTheExamplePoliciesAreValid(t *testing.T) {
	for _, dir := range []string{"../examples/policies", "../examples/compose/policies"} {
		set, err := LoadDir(dir)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if len(set.Tables) == 0 {
			t.Fatalf("%s has no tables", dir)
		}
	}
	set, _ := LoadDir(filepath.Join("..", "examples", "policies"))
	seen := map[Strategy]bool{}
	for _, p := range set.Tables {
		seen[p.Strategy] = true
	}
	for _, s := range []Strategy{StrategyAuto, StrategyBinpack, StrategyLightweight, StrategyZcube} {
		if !seen[s] {
			t.Errorf("no example policy uses strategy %s", s)
		}
	}
}
