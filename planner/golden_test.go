package planner

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite planner/testdata/*.golden.json from the current planner")

// TestPlansMatchGoldenFiles plans every fixture in testdata under each of
// its cases and compares the plan JSON with testdata/<fixture>.<case>.golden.json.
func TestPlansMatchGoldenFiles(t *testing.T) {
	fixtures, err := filepath.Glob("testdata/*.fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(fixtures) == 0 {
		t.Fatal("no fixtures")
	}
	for _, path := range fixtures {
		fx, err := loadFixture(path)
		if err != nil {
			t.Fatal(err)
		}
		base := strings.TrimSuffix(filepath.Base(path), ".fixture.json")
		names := make([]string, 0, len(fx.Cases))
		for n := range fx.Cases {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, name := range names {
			t.Run(base+"/"+name, func(t *testing.T) {
				snap, now, err := fx.snapshot()
				if err != nil {
					t.Fatal(err)
				}
				pol, err := fx.Cases[name].policy(now)
				if err != nil {
					t.Fatal(err)
				}
				pl, err := Plan(snap, pol)
				var got []byte
				if err != nil {
					got, _ = json.MarshalIndent(map[string]string{"error": err.Error()}, "", "  ")
				} else if got, err = json.MarshalIndent(pl, "", "  "); err != nil {
					t.Fatal(err)
				}
				got = append(got, '\n')
				checkGolden(t, filepath.Join("testdata", base+"."+name+".golden.json"), got)
			})
		}
	}
}

// checkGolden compares got with the golden file, or writes it there with
// -update.
func checkGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./planner -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("plan differs from %s (rerun with -update after checking the change):\n%s", golden, got)
	}
}
