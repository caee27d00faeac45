package actions

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/compactord/compactord/internal/testutil"
)

// logJSONFiles returns every JSON log file (commits, compaction files, V2
// JSON checkpoints, staged commits) of the shared test tables.
func logJSONFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	root := testutil.DeltaTestdata(t)
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".json") && strings.Contains(p, "_delta_log") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("found only %d log files under %s", len(files), root)
	}
	return files
}

func TestEveryLogLineRoundTrips(t *testing.T) {
	kinds := map[string]int{}
	for _, file := range logJSONFiles(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<24)
		for n := 1; sc.Scan(); n++ {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			a, err := ParseAction(line)
			if err != nil {
				t.Fatalf("%s:%d: %v", file, n, err)
			}
			kinds[a.Kind()]++
			out, err := MarshalAction(a)
			if err != nil {
				t.Fatalf("%s:%d: marshal: %v", file, n, err)
			}
			if bytes.ContainsRune(out, '\n') {
				t.Fatalf("%s:%d: marshaled action spans lines", file, n)
			}
			b, err := ParseAction(out)
			if err != nil {
				t.Fatalf("%s:%d: reparse %s: %v", file, n, out, err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%s:%d: round trip changed the action\n in: %s\nout: %s", file, n, line, out)
			}
			// Every field of the input survives: compare as generic JSON,
			// ignoring only explicit nulls, which mean "absent".
			if !reflect.DeepEqual(dropNulls(t, line), dropNulls(t, out)) {
				t.Fatalf("%s:%d: fields lost\n in: %s\nout: %s", file, n, line, out)
			}
		}
	}
	for _, k := range []string{"add", "remove", "metaData", "protocol", "txn", "commitInfo", "domainMetadata", "cdc", "checkpointMetadata", "sidecar"} {
		if kinds[k] == 0 {
			t.Errorf("no %s action in the test tables' JSON logs", k)
		}
	}
}

func dropNulls(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if e == nil {
					delete(x, k)
					continue
				}
				x[k] = walk(e)
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		}
		return v
	}
	return walk(v)
}

func TestParseActionKeepsUnknownFields(t *testing.T) {
	tests := []struct {
		name string
		line string
		want func(Action) bool
	}{
		{"unknown add field", `{"add":{"path":"a","partitionValues":{},"size":1,"modificationTime":2,"dataChange":true,"futureField":{"x":[1,2]}}}`,
			func(a Action) bool { return string(a.Add.Extra["futureField"]) == `{"x":[1,2]}` }},
		{"unknown DV field", `{"add":{"path":"a","partitionValues":{},"size":1,"modificationTime":2,"dataChange":true,"deletionVector":{"storageType":"u","pathOrInlineDv":"ab","offset":1,"sizeInBytes":3,"cardinality":4,"maxRowIndex":9}}}`,
			func(a Action) bool { return string(a.Add.DeletionVector.Extra["maxRowIndex"]) == `9` }},
		{"explicit null offset", `{"remove":{"path":"a","dataChange":true,"deletionVector":{"storageType":"i","pathOrInlineDv":"abcde","offset":null,"sizeInBytes":3,"cardinality":4}}}`,
			func(a Action) bool {
				return a.Remove.DeletionVector.Offset == nil && a.Remove.DeletionVector.UniqueID() == "iabcde"
			}},
		{"unknown action kind", `{"futureAction":{"a":1}}`,
			func(a Action) bool { return a.Kind() == "" && string(a.Unknown) == `{"futureAction":{"a":1}}` }},
		{"unknown protocol field", `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":[],"writerFeatures":["x"],"y":true}}`,
			func(a Action) bool {
				return string(a.Protocol.Extra["y"]) == "true" && a.Protocol.ReaderFeatures != nil
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ParseAction([]byte(tt.line))
			if err != nil {
				t.Fatal(err)
			}
			if !tt.want(a) {
				t.Fatalf("parsed %+v", a)
			}
			out, err := MarshalAction(a)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(dropNulls(t, []byte(tt.line)), dropNulls(t, out)) {
				t.Fatalf("round trip lost fields:\n in: %s\nout: %s", tt.line, out)
			}
		})
	}
}

func TestParseActionRejectsMalformedLines(t *testing.T) {
	for _, line := range []string{
		``, `{`, `[]`, `{}`, `{"add":null}`, `{"add":{"path":"a"},"remove":{"path":"b"}}`,
		`{"add":{"size":1}}`, `{"add":{"path":"a","size":"big"}}`, `{"remove":{"path":""}}`,
		`{"protocol":{"minReaderVersion":"1"}}`, `{"add":{"path":"a","deletionVector":{"offset":"x"}}}`,
	} {
		if _, err := ParseAction([]byte(line)); err == nil {
			t.Errorf("ParseAction(%q) succeeded", line)
		}
	}
}

func FuzzParseAction(f *testing.F) {
	for _, s := range []string{
		`{"add":{"path":"a%20b","partitionValues":{"p":null},"size":1,"modificationTime":2,"dataChange":true,"stats":"{\"numRecords\":1}","deletionVector":{"storageType":"u","pathOrInlineDv":"ab^Bg9^0rr910000000000","offset":1,"sizeInBytes":3,"cardinality":4}}}`,
		`{"remove":{"path":"a","deletionTimestamp":1,"dataChange":false,"extendedFileMetadata":true,"size":3,"tags":{"k":"v"}}}`,
		`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]}}`,
		`{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{}","partitionColumns":[],"configuration":{}}}`,
		`{"commitInfo":{"inCommitTimestamp":5,"operation":"WRITE"}}`,
		`{"txn":{"appId":"a","version":3}}`, `{"domainMetadata":{"domain":"d","configuration":"{}","removed":false}}`,
		`{"unknown":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		a, err := ParseAction(line)
		if err != nil {
			return
		}
		out, err := MarshalAction(a)
		if err != nil {
			t.Fatalf("parsed but cannot marshal: %v", err)
		}
		b, err := ParseAction(out)
		if err != nil {
			t.Fatalf("marshaled %s does not reparse: %v", out, err)
		}
		out2, err := MarshalAction(b)
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("marshal not stable: %s vs %s (%v)", out, out2, err)
		}
	})
}

// Delta's log schema evolvability: a line may carry keys beside its action
// (Spark ignores them); only one known action may be on a line.
func TestParseActionIgnoresKeysBesideItsAction(t *testing.T) {
	add := `{"add":{"path":"p.parquet","partitionValues":{},"size":793,"modificationTime":1,"dataChange":true,"some_new_column_in_add_action":1},"some_new_action_alongside_add_action":["a","1"]}`
	a, err := ParseAction([]byte(add))
	if err != nil {
		t.Fatal(err)
	}
	if a.Add == nil || a.Add.Path != "p.parquet" || a.Add.Size != 793 || string(a.Add.Extra["some_new_column_in_add_action"]) != "1" {
		t.Fatalf("parsed %+v", a)
	}
	ci := `{"commitInfo":{"timestamp":1623255724166,"operation":"WRITE"},"some_new_action_alongside_add_action":["a","1"]}`
	if a, err = ParseAction([]byte(ci)); err != nil || a.Kind() != "commitInfo" {
		t.Fatalf("commitInfo line: %+v, %v", a, err)
	}
	unknown := `{"futureAction":{"a":1},"otherFutureAction":2}`
	if a, err = ParseAction([]byte(unknown)); err != nil || a.Kind() != "" || string(a.Unknown) != unknown {
		t.Fatalf("two unknown keys: %+v, %v", a, err)
	}
	two := `{"add":{"path":"a"},"txn":{"appId":"x","version":1}}`
	if _, err = ParseAction([]byte(two)); !errors.Is(err, ErrMalformedAction) || !strings.Contains(err.Error(), "add and txn") {
		t.Fatalf("two known actions: err = %v", err)
	}
}
