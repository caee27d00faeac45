package policies

import (
	"strings"
	"testing"
	"time"
)

func TestAVacuumBlockDecodesWithDefaultsAndRoundTrips(t *testing.T) {
	src := "table \"t\" {\n  url = \"mem://t\"\n  vacuum {\n    retention = \"2d\"\n    force_retention = true\n  }\n}\n" +
		"table \"u\" {\n  url = \"mem://u\"\n  vacuum {\n    mode = \"full\"\n    interval = \"6h\"\n    full_interval = \"6h\"\n    concurrency = 4\n  }\n}\n" +
		"table \"w\" {\n  url = \"mem://w\"\n}\n"
	set, byName := parseTables(t, src)
	v := byName["t"].Vacuum
	if v == nil || v.Mode != VacuumAuto || v.Interval != DefaultVacuumInterval || v.FullInterval != DefaultVacuumFullInterval ||
		v.Retention != 48*time.Hour || !v.ForceRetention {
		t.Fatalf("t: %+v", v)
	}
	if u := byName["u"].Vacuum; u == nil || u.Mode != VacuumFull || u.Interval != 6*time.Hour || u.Concurrency != 4 {
		t.Fatalf("u: %+v", u)
	}
	if byName["w"].Vacuum != nil {
		t.Fatalf("w has a vacuum block: %+v", byName["w"].Vacuum)
	}
	again, _ := roundTrip(t, set)
	for _, p := range again.Tables {
		if want := byName[p.Name].Vacuum; (want == nil) != (p.Vacuum == nil) || (want != nil && *want != *p.Vacuum) {
			t.Fatalf("%s: round trip %+v, want %+v", p.Name, p.Vacuum, want)
		}
	}
}

func TestBadVacuumBlocksAreReportedAtTheirAttribute(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"bad mode", `mode = "deep"`, "t.hcl:4:5: Invalid value for vacuum.mode"},
		{"full interval below interval", `interval = "48h"`, "Invalid value for vacuum.full_interval"},
		{"force without retention", `force_retention = true`, "t.hcl:4:5: Invalid value for vacuum.force_retention"},
		{"unknown attribute", `dry_run = true`, `An argument named "dry_run"`},
		{"bad duration", `retention = "soon"`, "Invalid value for retention"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := "table \"t\" {\n  url = \"mem://t\"\n  vacuum {\n    " + c.body + "\n    full_interval = \"24h\"\n  }\n}\n"
			if c.name == "full interval below interval" {
				src = "table \"t\" {\n  url = \"mem://t\"\n  vacuum {\n    " + c.body + "\n  full_interval = \"24h\"\n  }\n}\n"
			}
			wantParseError(t, src, c.want)
		})
	}
}

func TestAStatsBackfillBlockDecodesWithItsDefault(t *testing.T) {
	src := "table \"t\" {\n  url = \"mem://t\"\n  stats_backfill {}\n}\ntable \"u\" {\n  url = \"mem://u\"\n  stats_backfill {\n    max_files = 5\n  }\n}\n"
	_, byName := parseTables(t, src)
	got := map[string]int{}
	for name, p := range byName {
		got[name] = p.StatsBackfill.MaxFiles
	}
	if got["t"] != DefaultStatsBackfillMaxFiles || got["u"] != 5 {
		t.Fatalf("max_files %v", got)
	}
	set, _ := parseTables(t, src)
	if _, text := roundTrip(t, set); !strings.Contains(text, "max_files = 5") {
		t.Fatalf("round trip lost max_files = 5:\n%s", text)
	}
	wantParseError(t, "table \"t\" {\n  url = \"mem://t\"\n  stats_backfill {\n    max_files = 0\n  }\n}\n", "stats_backfill.max_files")
}
