package delta_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/compactord/compactord/delta/scan"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/internal/deltatest"
	"github.com/compactord/compactord/delta/schema"
	"github.com/compactord/compactord/internal/testutil"
)

// FuzzParseSchema: parsing never panics, and every accepted schema
// re-marshals to JSON that parses to the same schema, whose data schema
// either builds or fails with an error.
func FuzzParseSchema(f *testing.F) {
	f.Add(`{"type":"struct","fields":[{"name":"a","type":"decimal(10,2)","nullable":true,"metadata":{}}]}`)
	f.Add(`{"type":"struct","fields":[{"name":"m","type":{"type":"map","keyType":"string","valueType":{"type":"array","elementType":"void","containsNull":true},"valueContainsNull":false},"nullable":false,"metadata":{"k":[1]}}]}`)
	if dirs, err := os.ReadDir(testutil.DeltaTestdata(f)); err == nil {
		for _, d := range dirs {
			if d.IsDir() {
				for _, s := range deltatest.SchemaStringsInLog(f, filepath.Join(testutil.DeltaTestdata(f), d.Name(), "delta")) {
					f.Add(s)
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := schema.ParseSchema(s)
		if err != nil {
			return
		}
		b, err := st.MarshalJSON()
		if err != nil {
			t.Fatalf("marshal of a parsed schema failed: %v", err)
		}
		st2, err := schema.ParseSchema(string(b))
		if err != nil {
			t.Fatalf("re-parse failed: %v\n%s", err, b)
		}
		if !reflect.DeepEqual(st.String(), st2.String()) {
			t.Fatalf("round trip changed the schema:\n%s\n%s", st, st2)
		}
		_, _ = scan.DataSchemaOf(st, &actions.Metadata{})
	})
}
