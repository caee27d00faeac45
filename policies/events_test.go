package policies

import (
	"reflect"
	"testing"
	"time"
)

func TestAnEventsBlockSubscribesTheDaemonAndSlowsThePollToTheReconcilingInterval(t *testing.T) {
	set, _ := parseTables(t, `daemon {
  poll = "30s"
  events {
    url = "rabbit://compactord"
  }
}
table "t" {
  url = "s3://lake/t"
}
`)
	d := set.Daemon
	if d.Events.URL != "rabbit://compactord" || d.Events.ReconcileInterval != DefaultReconcileInterval || d.PollInterval() != DefaultReconcileInterval {
		t.Fatalf("events = %+v, poll interval %v", d.Events, d.PollInterval())
	}
	again, text := roundTrip(t, set)
	if !reflect.DeepEqual(again.Daemon, set.Daemon) {
		t.Fatalf("round trip changed the daemon block:\n%s", text)
	}

	set, _ = parseTables(t, "daemon {\n  events {\n    url = \"awssqs://sqs.us-east-2.amazonaws.com/123456789012/lake?region=us-east-2\"\n    reconcile_interval = \"2m\"\n  }\n}\ntable \"t\" {\n  url = \"s3://lake/t\"\n}\n")
	if got := set.Daemon.PollInterval(); got != 2*time.Minute {
		t.Fatalf("poll interval = %v, want the reconciling interval 2m", got)
	}
	set, _ = parseTables(t, "daemon {\n  poll = \"30s\"\n}\ntable \"t\" {\n  url = \"s3://lake/t\"\n}\n")
	if set.Daemon.Events.Enabled() || set.Daemon.PollInterval() != 30*time.Second {
		t.Fatalf("without events: %+v, poll interval %v", set.Daemon.Events, set.Daemon.PollInterval())
	}
}

func TestABadEventsBlockIsRefusedWhereItIsWritten(t *testing.T) {
	for _, tc := range []struct{ name, block, want string }{
		{"no url", "  events {\n    reconcile_interval = \"1m\"\n  }\n", "t.hcl:2:3: Missing events url"},
		{"unknown scheme", "  events {\n    url = \"kafka://topic\"\n  }\n", `t.hcl:3:5: Invalid value for events.url; events.url: bad url: events url kafka://topic: scheme "kafka" is not one of`},
		{"too short", "  events {\n    url = \"mem://x\"\n    reconcile_interval = \"10ms\"\n  }\n", "t.hcl:4:5: Invalid value for events.reconcile_interval"},
		{"unknown attribute", "  events {\n    url = \"mem://x\"\n    queue = \"q\"\n  }\n", "t.hcl:4:5: Unsupported argument"},
		{"two blocks", "  events {\n    url = \"mem://x\"\n  }\n  events {\n    url = \"mem://y\"\n  }\n", "t.hcl:5:3: Duplicate block"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantParseError(t, "daemon {\n"+tc.block+"}\ntable \"t\" {\n  url = \"s3://lake/t\"\n}\n", tc.want)
		})
	}
}
