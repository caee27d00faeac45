package policies

import (
	"reflect"
	"testing"
)

func TestTheFleetBlockSetsATablesQuotaAndGroupAndTheDaemonTheGroupQuotas(t *testing.T) {
	src := "daemon {\n  group_quotas = { etl = 1, adhoc = 0.25 }\n}\n" +
		"table \"t\" {\n  url = \"mem://t\"\n}\n" +
		"table \"u\" {\n  url = \"mem://u\"\n  fleet {\n    quota = 0.2\n    group = \"etl\"\n  }\n}\n"
	set, byName := parseTables(t, src)
	if f := byName["t"].Fleet; f != (Fleet{Quota: DefaultFleetQuota}) {
		t.Fatalf("t: fleet %+v, want the default quota and no group", f)
	}
	if f := byName["u"].Fleet; f != (Fleet{Quota: 0.2, Group: "etl"}) {
		t.Fatalf("u: fleet %+v", f)
	}
	if want := map[string]float64{"etl": 1, "adhoc": 0.25}; !reflect.DeepEqual(set.Daemon.GroupQuotas, want) {
		t.Fatalf("group quotas %v, want %v", set.Daemon.GroupQuotas, want)
	}
	again, _ := roundTrip(t, set)
	if !reflect.DeepEqual(again.Daemon.GroupQuotas, set.Daemon.GroupQuotas) {
		t.Fatalf("round trip group quotas %v", again.Daemon.GroupQuotas)
	}
	for _, p := range again.Tables {
		if p.Fleet != byName[p.Name].Fleet {
			t.Fatalf("%s: round trip fleet %+v", p.Name, p.Fleet)
		}
	}
}

func TestBadFleetQuotasAreReportedAtTheirAttribute(t *testing.T) {
	wantParseError(t, "table \"t\" {\n  url = \"mem://t\"\n  fleet {\n    quota = 0\n  }\n}\n", "t.hcl:4:5: Invalid value for fleet.quota")
	wantParseError(t, "daemon {\n  group_quotas = { etl = -1 }\n}\ntable \"t\" {\n  url = \"mem://t\"\n}\n", "group_quotas")
	wantParseError(t, "daemon {\n  group_quotas = { etl = \"one\" }\n}\ntable \"t\" {\n  url = \"mem://t\"\n}\n", `want a number for "etl"`)
}
