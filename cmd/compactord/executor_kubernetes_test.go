package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/fanout"
	"github.com/compactord/compactord/fanout/kubernetes"
	"github.com/compactord/compactord/internal/tabletest"
	"github.com/compactord/compactord/policies"
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
	kubeconfig := writeKubeconfig(t)
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

// writeKubeconfig writes a kubeconfig of a cluster where nothing listens,
// namespace lake, and returns its path.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(`{"apiVersion":"v1","kind":"Config","current-context":"x",`+
		`"clusters":[{"name":"x","cluster":{"server":"https://127.0.0.1:1"}}],"users":[{"name":"x","user":{"token":"t"}}],`+
		`"contexts":[{"name":"x","context":{"cluster":"x","user":"x","namespace":"lake"}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The daemon's executor kinds include kubernetes; its launcher is built
// once from the environment, and again after a failure.
func TestTheDaemonBuildsOneKubernetesLauncherFromItsEnvironment(t *testing.T) {
	t.Setenv("KUBECONFIG", writeKubeconfig(t))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("POD_NAME", "")
	t.Setenv("COMPACTORD_JOB_TEMPLATE", "../../deploy/kubernetes/job-template.yaml")
	t.Setenv("COMPACTORD_IMAGE", "")
	ls := daemonLaunchers(hclog.NewNullLogger())
	if ls[policies.ExecutorProcess] == nil {
		t.Fatal("the process kind is gone")
	}
	mk := ls[policies.ExecutorKubernetes]
	if _, err := mk(policies.Executor{Kind: policies.ExecutorKubernetes}); err == nil || !strings.Contains(err.Error(), "no worker image") {
		t.Fatalf("without an image: %v", err)
	}
	t.Setenv("COMPACTORD_IMAGE", "registry.example.com/compactord:v3")
	first, err := mk(policies.Executor{Kind: policies.ExecutorKubernetes})
	if err != nil {
		t.Fatal(err)
	}
	kl, ok := first.(*kubernetes.Launcher)
	if !ok {
		t.Fatalf("launcher %T", first)
	}
	job, err := kl.Job(fanout.LaunchSpec{PlanID: "p", PlanURL: "s3://b/t/_compactord/plans/p/plan.json", Units: 2})
	if err != nil {
		t.Fatal(err)
	}
	if job.Namespace != "lake" || job.Spec.Template.Spec.ServiceAccountName != "compactord-worker" || job.Spec.Template.Spec.Containers[0].Image != "registry.example.com/compactord:v3" {
		t.Fatalf("job %s/%s service account %q image %q", job.Namespace, job.Name, job.Spec.Template.Spec.ServiceAccountName, job.Spec.Template.Spec.Containers[0].Image)
	}
	if again, err := mk(policies.Executor{Kind: policies.ExecutorKubernetes}); err != nil || again != first {
		t.Fatalf("second build: %v, %v; want the first launcher", again, err)
	}
}
