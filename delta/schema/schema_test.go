package schema

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta/internal/deltatest"
	"github.com/compactord/compactord/internal/testutil"
)

// schemaStringsInLog returns every metaData.schemaString found in the JSON
// commits of a test table (read independently of the log replay code).
func schemaStringsInLog(t *testing.T, root string) []string {
	t.Helper()
	return deltatest.SchemaStringsInLog(t, root)
}

func TestSchemaRoundTripOnEveryTestTable(t *testing.T) {
	dirs, err := os.ReadDir(testutil.DeltaTestdata(t))
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		for _, s := range schemaStringsInLog(t, filepath.Join(testutil.DeltaTestdata(t), d.Name(), "delta")) {
			total++
			st, err := ParseSchema(s)
			if err != nil {
				if strings.Contains(s, `"variant"`) {
					continue
				}
				t.Errorf("%s: %v", d.Name(), err)
				continue
			}
			b, err := st.MarshalJSON()
			if err != nil {
				t.Errorf("%s: marshal: %v", d.Name(), err)
				continue
			}
			var want, got any
			if err := json.Unmarshal([]byte(s), &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("%s: marshalled schema is not JSON: %v\n%s", d.Name(), err, b)
			}
			if !reflect.DeepEqual(want, got) {
				t.Errorf("%s: round trip differs\nwant %s\n got %s", d.Name(), s, b)
			}
		}
	}
	if total < 40 {
		t.Fatalf("only %d schema strings found in the test tables", total)
	}
}

func TestParseSchemaTypes(t *testing.T) {
	s := `{"type":"struct","fields":[
	 {"name":"d","type":"decimal(38,18)","nullable":true,"metadata":{}},
	 {"name":"a","type":{"type":"array","elementType":{"type":"map","keyType":"string","valueType":"timestamp_ntz","valueContainsNull":false},"containsNull":true},"nullable":false,"metadata":{"x":{"y":[1,2]}}},
	 {"name":"v","type":"void","nullable":true,"metadata":{}}]}`
	st, err := ParseSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Fields[0].Type; got.Name != "decimal" || got.Precision != 38 || got.Scale != 18 {
		t.Errorf("decimal parsed as %+v", got)
	}
	a := st.Fields[1]
	if a.Nullable || a.Type.ElementType == nil || !a.Type.ContainsNull || a.Type.ElementType.KeyType.Name != "string" ||
		a.Type.ElementType.ValueType.Name != "timestamp_ntz" || a.Type.ElementType.ValueContainsNull {
		t.Errorf("array field parsed as %+v", a.Type)
	}
	if string(a.Metadata["x"]) != `{"y":[1,2]}` {
		t.Errorf("metadata kept as %s", a.Metadata["x"])
	}
	if got := a.Type.String(); got != "array<map<string,timestamp_ntz>>" {
		t.Errorf("String() = %s", got)
	}
}

func TestParseSchemaErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"not json", `{"type":`, "parse schema"},
		{"missing schemaString", ``, "metaData has no schemaString"},
		{"unknown primitive", `{"type":"struct","fields":[{"name":"a","type":"int128","nullable":true,"metadata":{}}]}`, `unknown primitive type "int128"`},
		{"unknown complex", `{"type":"struct","fields":[{"name":"a","type":{"type":"tuple"},"nullable":true,"metadata":{}}]}`, `unknown complex type "tuple"`},
		{"bad decimal", `{"type":"struct","fields":[{"name":"a","type":"decimal(39,2)","nullable":true,"metadata":{}}]}`, "invalid decimal"},
		{"top level primitive", `"long"`, "not a struct"},
		{"duplicate", `{"type":"struct","fields":[{"name":"a","type":"long"},{"name":"A","type":"long"}]}`, "duplicate field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSchema(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestPhysicalPathRoundTrip(t *testing.T) {
	st, err := ParseSchema(`{"type":"struct","fields":[{"name":"Outer","type":{"type":"struct","fields":[
	  {"name":"inner","type":"long","nullable":true,"metadata":{"delta.columnMapping.id":2,"delta.columnMapping.physicalName":"col-b"}}]},
	  "nullable":true,"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-a"}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.PhysicalPath([]string{"outer", "INNER"})
	if err != nil || strings.Join(p, ".") != "col-a.col-b" {
		t.Fatalf("PhysicalPath = %v, %v", p, err)
	}
	l, err := st.LogicalPath(p)
	if err != nil || strings.Join(l, ".") != "Outer.inner" {
		t.Fatalf("LogicalPath = %v, %v", l, err)
	}
	if _, err := st.PhysicalPath([]string{"outer", "nope"}); err == nil || !strings.Contains(err.Error(), "outer.nope") {
		t.Fatalf("missing column error = %v", err)
	}
	if id, ok := FieldID(st.Fields[0]); !ok || id != 1 {
		t.Fatalf("FieldID = %d, %v", id, ok)
	}
}
