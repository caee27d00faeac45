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
	// The last file's stats claim one row more than its footer: its job
	// fails.
	tbl, adds := tabletest.NewTableWithLyingStats(t, t.TempDir(), 4, 3)
	size := adds[3].Size
	// A target of two files' size makes two jobs of two files each.
	var stdout, stderr bytes.Buffer
	target := strconv.FormatInt(2*size+size/2, 10) + "B"
	code := mainExit(context.Background(), []string{"compact", tbl.URL, "--strategy", "binpack", "--target-file-size", target, "--json"}, &stdout, &stderr)
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
