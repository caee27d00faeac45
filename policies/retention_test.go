package policies

import (
	"fmt"
	"testing"
)

func TestARetentionBlockTakesTheEpochUnitOfAnIntegerColumnAsExpireDoes(t *testing.T) {
	const block = "table \"t\" {\n  url = \"mem://t\"\n  retention {\n    column = \"ts\"\n    older_than = \"90d\"\n    epoch_unit = %q\n  }\n}\n"
	for _, unit := range []string{"days", "seconds", "milliseconds", "microseconds"} {
		set, tables := parseTables(t, fmt.Sprintf(block, unit))
		if r := tables["t"].Retention; r == nil || r.EpochUnit != unit {
			t.Fatalf("%s: retention %+v", unit, r)
		}
		again, text := roundTrip(t, set)
		if got := again.Tables[0].Retention.EpochUnit; got != unit {
			t.Errorf("%s reads back as %q:\n%s", unit, got, text)
		}
	}
	wantParseError(t, fmt.Sprintf(block, "hours"), `retention.epoch_unit: unknown value: "hours" (want days, seconds, milliseconds, microseconds)`)
}
