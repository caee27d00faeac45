package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compactord/compactord/internal/tabletest"
)

// `run-plan --executor kubernetes` goes through the kubeconfig to the API
// server's Job endpoint (here nothing listens: Kubernetes does not run on
// this machine); the failed create fails the run and leaves the table as
// it was, with no plan directory or output behind.
func TestRunPlanWithTheKubernetesExecutorCreatesItsJobThroughTheKubeconfig(t *testing.T) {
	tbl, pl := fanoutPlan(t, 4)
	before := tabletest.Latest(t, tbl).Version
	dir := t.TempDir()
	planPath := filepath.Join(dir, "plan.json")
	var planJSON bytes.Buffer
	if err := writeJSONTo(&planJSON, planFile{Table: tbl.URL, CompactionPlan: pl}); err != nil || os.WriteFile(planPath, planJSON.Bytes(), 0o600) != nil {
		t.Fatalf("write the plan file: %v", err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`{"apiVersion":"v1","kind":"Config","current-context":"x",`+
		`"clusters":[{"name":"x","cluster":{"server":"https://127.0.0.1:1"}}],"users":[{"name":"x","user":{"token":"t"}}],`+
		`"contexts":[{"name":"x","context":{"cluster":"x","user":"x","namespace":"lake"}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "no image", args: []string{"--kubeconfig", kubeconfig}, wantErr: "no worker image"},
		{name: "no kubeconfig", args: []string{"--kubeconfig", filepath.Join(dir, "none")}, wantErr: "kubeconfig"},
		{name: "a template it refuses", args: []string{"--kubeconfig", kubeconfig, "--kube-image", "c:1", "--kube-job-template", planPath}, wantErr: "job template"},
		{name: "the API server is not there", args: []string{"--kubeconfig", kubeconfig, "--kube-image", "c:1", "--kube-job-template", "../../deploy/kubernetes/job-template.yaml"},
			wantErr: "create Job lake/compactord-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("COMPACTORD_IMAGE", "")
			t.Setenv("POD_NAME", "")
			var out, errb bytes.Buffer
			args := append([]string{"run-plan", planPath, "--executor", "kubernetes", "--log-level", "off"}, tc.args...)
			if code := mainExit(context.Background(), args, &out, &errb); code == 0 || !strings.Contains(errb.String(), tc.wantErr) {
				t.Fatalf("exit %d, stderr %q; want a failure naming %q", code, errb.String(), tc.wantErr)
			}
			if v := tabletest.Latest(t, tbl).Version; v != before {
				t.Fatalf("the table moved to version %d", v)
			}
			assertNoOrphans(t, tbl)
		})
	}
}
