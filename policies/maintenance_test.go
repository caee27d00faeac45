package policies

import "testing"

func TestCheckpointAndLogCleanupAreOnByDefaultAndRoundTrip(t *testing.T) {
	src := "table \"t\" {\n  url = \"mem://t\"\n}\n" +
		"table \"u\" {\n  url = \"mem://u\"\n  checkpoint {\n    enabled = false\n  }\n  log_cleanup {\n    concurrency = 2\n  }\n}\n"
	set, byName := parseTables(t, src)
	if c := byName["t"].Checkpoint; !c.Enabled || !c.CatchUp || c.MaxBehind != 0 {
		t.Fatalf("t: checkpoint %+v", c)
	}
	if l := byName["t"].LogCleanup; !l.Enabled || l.Concurrency != 0 {
		t.Fatalf("t: log_cleanup %+v", l)
	}
	if c, l := byName["u"].Checkpoint, byName["u"].LogCleanup; c.Enabled || !c.CatchUp || !l.Enabled || l.Concurrency != 2 {
		t.Fatalf("u: %+v %+v", c, l)
	}
	again, _ := roundTrip(t, set)
	for _, p := range again.Tables {
		if p.Checkpoint != byName[p.Name].Checkpoint || p.LogCleanup != byName[p.Name].LogCleanup {
			t.Fatalf("%s: round trip %+v %+v", p.Name, p.Checkpoint, p.LogCleanup)
		}
	}
}

func TestBadCheckpointAndLogCleanupBlocksAreReportedAtTheirAttribute(t *testing.T) {
	for _, c := range []struct{ name, block, body, want string }{
		{"negative max_behind", "checkpoint", `max_behind = -1`, "t.hcl:4:5: Invalid value for checkpoint.max_behind"},
		{"unknown checkpoint attribute", "checkpoint", `interval = 10`, `An argument named "interval"`},
		{"too many deletes", "log_cleanup", `concurrency = 5000`, "t.hcl:4:5: Invalid value for log_cleanup.concurrency"},
		{"not a bool", "log_cleanup", `enabled = "yes"`, "Invalid value for enabled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := "table \"t\" {\n  url = \"mem://t\"\n  " + c.block + " {\n    " + c.body + "\n  }\n}\n"
			wantParseError(t, src, c.want)
		})
	}
}
