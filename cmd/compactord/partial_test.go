package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/compactord/compactord/internal/testutil/tabletest"
)

func TestACompactionThatCommitsSomeJobsAndFailsOthersExitsZeroAsPartial(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl := tabletest.NewTable(t, dir)
	var lines []string
	var size int64
	for i := int64(0); i < 4; i++ {
		a := tabletest.WriteDataFile(t, tbl, tabletest.IDRange(i*10, 10))
		if i == 3 {
			// The stats claim one row more than the footer: its job fails.
			a.Stats = strings.Replace(a.Stats, `"numRecords":10`, `"numRecords":11`, 1)
		}
		size = a.Size
		lines = append(lines, tabletest.AddLine(t, a))
	}
	lines = append(lines, `{"commitInfo":{"operation":"WRITE","txnId":"w1"}}`)
	tabletest.PutCommit(t, tbl, 1, lines)
	// A target of two files' size makes two jobs of two files each.
	var stdout, stderr bytes.Buffer
	target := strconv.FormatInt(2*size+size/2, 10) + "B"
	code := mainExit(ctx, []string{"compact", tbl.URL, "--strategy", "binpack", "--target-file-size", target, "--json"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, want 0 for a partial run; stderr:\n%s", code, stderr.String())
	}
	var out struct {
		Status        string `json:"status"`
		JobsCommitted int    `json:"jobsCommitted"`
		JobsFailed    int    `json:"jobsFailed"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("%v in %s", err, stdout.String())
	}
	if out.Status != "partial" || out.JobsCommitted != 1 || out.JobsFailed != 1 {
		t.Fatalf("result %+v, want status partial with 1 job committed and 1 failed", out)
	}
	if !strings.Contains(stderr.String(), "partial: 1 of 2 jobs failed") {
		t.Fatalf("stderr does not say what failed:\n%s", stderr.String())
	}
}
