package planner

import (
	"encoding/json"
	"testing"
	"time"
)

func TestPlanSurvivesAJSONRoundTripAndBindsToItsSnapshot(t *testing.T) {
	fx, err := loadFixture("testdata/clustered.fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	snap, now, err := fx.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	pl, err := Plan(snap, Policy{Strategy: StrategyZCube, TargetFileSize: 100, MinFileSize: 200, MinCubeSize: 800, Now: now, SettleWindow: 15 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(pl)
	if err != nil {
		t.Fatal(err)
	}
	var back CompactionPlan
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Bind(snap); err != nil {
		t.Fatal(err)
	}
	if len(back.Jobs) != len(pl.Jobs) || len(back.Jobs) == 0 {
		t.Fatalf("%d jobs back, %d planned", len(back.Jobs), len(pl.Jobs))
	}
	for i, j := range back.Jobs {
		want := pl.Jobs[i]
		if len(j.Sources) != len(want.Sources) {
			t.Fatalf("job %s: %d sources bound, want %d", j.ID, len(j.Sources), len(want.Sources))
		}
		for k := range j.Sources {
			if j.Sources[k] != want.Sources[k] {
				t.Fatalf("job %s source %d bound to %s, want %s", j.ID, k, j.Sources[k].Path, want.Sources[k].Path)
			}
		}
		if j.Sort == nil || j.Tags[TagZCubeID] != want.Tags[TagZCubeID] {
			t.Fatalf("job %s lost its sort or tags", j.ID)
		}
	}
	snap.Version++
	if err := back.Bind(snap); err == nil {
		t.Fatal("bound to a snapshot of another version")
	}
	snap.Version--
	gone := back.Jobs[0].SourcePaths[0]
	live := snap.Files[:0:0]
	for _, a := range snap.Files {
		if a.Path != gone {
			live = append(live, a)
		}
	}
	snap.Files = live
	if err := back.Bind(snap); err == nil {
		t.Fatal("bound although a source is gone")
	}
}
