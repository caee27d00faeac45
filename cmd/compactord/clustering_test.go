package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/internal/testutil"
)

func TestPredicatesAddThenClusteringAdviseRanksTheFilteredColumnAndChangesNothing(t *testing.T) {
	dir := testutil.CopyDeltaTable(t, "dv-basic-with-checkpoint")
	url := "file://" + dir
	var lines strings.Builder
	now := time.Now().UTC()
	for i := range 40 {
		fmt.Fprintf(&lines, `{"predicate": "id BETWEEN %d AND %d", "weight": 2, "time": %q}`+"\n", i*10, i*10+5, now.Add(-time.Duration(i)*time.Hour).Format(time.RFC3339))
	}
	file := filepath.Join(t.TempDir(), "preds.jsonl")
	if err := os.WriteFile(file, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := mainExit(context.Background(), []string{"predicates", "add", url, file}, &out, &errOut); code != 0 {
		t.Fatalf("predicates add: exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "40 predicates recorded") {
		t.Fatalf("predicates add printed %q", out.String())
	}
	stored := filepath.Join(dir, "_compactord", "clustering.json")
	before, err := os.ReadFile(stored)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	args := []string{"clustering", "advise", url, "--json", "--min-table-size", "0", "--target-file-size", "512b", "--min-gain", "0.3"}
	if code := mainExit(context.Background(), args, &out, &errOut); code != 0 {
		t.Fatalf("clustering advise: exit %d: %s", code, errOut.String())
	}
	var rep struct {
		Change bool     `json:"change"`
		Key    []string `json:"key"`
		Advice struct {
			Replayed int `json:"replayed"`
			Ranking  []struct {
				Key       []string `json:"key"`
				FilesRead float64  `json:"files_read"`
			} `json:"ranking"`
			Baseline struct {
				FilesRead float64 `json:"files_read"`
			} `json:"baseline"`
		} `json:"advice"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if !rep.Change || strings.Join(rep.Key, ",") != "id" || rep.Advice.Replayed != 40 || len(rep.Advice.Ranking) == 0 {
		t.Fatalf("advice %s", out.String())
	}
	after, err := os.ReadFile(stored)
	if err != nil || !bytes.Equal(before, after) {
		t.Fatalf("advise changed the stored record (%v)", err)
	}
	// The text form names the verdict.
	out.Reset()
	if code := mainExit(context.Background(), args[:len(args)-7], &out, &errOut); code != 0 {
		t.Fatalf("clustering advise: exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "verdict:") || !strings.Contains(out.String(), "(current layout)") {
		t.Fatalf("text advice:\n%s", out.String())
	}
	// A malformed batch is refused whole.
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte(`{"predicate":"id > 1"}`+"\n"+`{"weight":1}`+"\n"), 0o644)
	if code := mainExit(context.Background(), []string{"predicates", "add", url, bad}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "line 2") {
		t.Fatalf("bad batch: exit %d, stderr %q", code, errOut.String())
	}
}

func TestPostPredicatesRecordsABatchInTheTablesEvidence(t *testing.T) {
	tableDir := testutil.CopyDeltaTable(t, "dv-basic-with-checkpoint")
	dir := t.TempDir()
	writePolicy(t, dir, "t.hcl", fmt.Sprintf("table \"t\" {\n  url = \"file://%s\"\n}\n", tableDir))
	ld := startRealDaemon(t, dir, time.Hour)
	postBody := func(path, body string) (int, string) {
		t.Helper()
		resp, err := http.Post(ld.base+path, "application/x-ndjson", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := postBody("/tables/t/predicates", `{"predicate": "id > 5", "weight": 3}`+"\n"+`{"predicate": "id < 2"}`+"\n")
	if code != http.StatusOK || !strings.Contains(body, `"recorded": 2`) {
		t.Fatalf("POST predicates: %d %s", code, body)
	}
	data, err := os.ReadFile(filepath.Join(tableDir, "_compactord", "clustering.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Entries []struct {
			Predicate string  `json:"predicate"`
			Weight    float64 `json:"weight"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(data, &rec); err != nil || len(rec.Entries) != 2 || rec.Entries[0].Predicate != "id > 5" {
		t.Fatalf("stored %s (%v)", data, err)
	}
	if code, body := postBody("/tables/t/predicates", `{"predicate": "id > 5"}`+"\n"+`{"weight": 2}`+"\n"); code != http.StatusBadRequest || !strings.Contains(body, "line 2") {
		t.Fatalf("bad batch: %d %s", code, body)
	}
	if code, _ := postBody("/tables/nope/predicates", `{"predicate": "id > 5"}`); code != http.StatusNotFound {
		t.Fatalf("unknown table: %d", code)
	}
}
