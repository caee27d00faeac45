package testutil

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Expected is one table's entry in ../shared/testdata/delta/expected.json:
// the known answers for a shared test table.
type Expected struct {
	HasExpectedDir bool  `json:"hasExpectedDir"`
	LiveFiles      int   `json:"liveFiles"`
	LiveRows       int64 `json:"liveRows"`
	LogOnly        bool  `json:"logOnly"`
	MustRefuse     bool  `json:"mustRefuse"`
	Version        int64 `json:"version"`
}

// Readable reports whether the table has data a reader reads: it is
// neither log-only nor a table every reader must refuse.
func (e Expected) Readable() bool { return !e.LogOnly && !e.MustRefuse }

// ExpectedTables reads ../shared/testdata/delta/expected.json: the known
// answers of every shared test table, by table name. It fails the test
// when the file cannot be read or lists fewer than 50 tables.
func ExpectedTables(t testing.TB) map[string]Expected {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(DeltaTestdata(t), "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]Expected
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("expected.json: %v", err)
	}
	if len(m) < 50 {
		t.Fatalf("expected.json lists only %d tables", len(m))
	}
	return m
}
