package runner

import (
	"testing"

	"github.com/compactord/compactord/autocluster"
	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/tableop"
)

func TestAnAutoClusteringPolicyRunsTheKeyChoiceBeforeCompaction(t *testing.T) {
	p := policies.DefaultPolicy()
	p.URL = "mem://t"
	var names []string
	for _, f := range DefaultOps(compaction.RunOptions{}) {
		if _, ok, err := f.New(p, tableop.Env{}); err != nil || ok && f.Name == autocluster.Name {
			t.Fatalf("%s for a policy without columns = \"auto\": ok %v, %v", f.Name, ok, err)
		}
	}
	p.Clustering.Auto = true
	for _, f := range DefaultOps(compaction.RunOptions{}) {
		if _, ok, err := f.New(p, tableop.Env{}); err == nil && ok {
			names = append(names, f.Name)
		}
	}
	if len(names) < 2 || names[0] != autocluster.Name || names[1] != compaction.Name {
		t.Fatalf("operations %v: want %s first, then %s", names, autocluster.Name, compaction.Name)
	}
}
