package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/fanout"
	"github.com/compactord/compactord/fanout/kubernetes"
	"github.com/compactord/compactord/internal/testutil/tabletest"
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
// once from the environment, and again after a failure. The workers of
// both kinds inherit the daemon's --store-* flags.
func TestTheDaemonBuildsOneKubernetesLauncherFromItsEnvironment(t *testing.T) {
	t.Setenv("KUBECONFIG", writeKubeconfig(t))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("POD_NAME", "")
	t.Setenv("COMPACTORD_JOB_TEMPLATE", "../../deploy/kubernetes/job-template.yaml")
	t.Setenv("COMPACTORD_IMAGE", "")
	o, err := parseDaemonFlags(commandNamed("run").flags(context.Background(), io.Discard), []string{"--policies", t.TempDir(), "--store-attempts", "9", "--store-write-timeout", "20m"})
	if err != nil {
		t.Fatal(err)
	}
	storeArgs := []string{"--store-attempts=9", "--store-write-timeout=20m0s"}
	ls := newRunner(hclog.NewNullLogger(), policies.Daemon{}, o.Store).Launchers
	if ls[policies.ExecutorProcess] == nil {
		t.Fatal("the process kind is gone")
	}
	pl, err := ls[policies.ExecutorProcess](policies.Executor{Kind: policies.ExecutorProcess}, hclog.NewNullLogger())
	if p, ok := pl.(*fanout.ProcessLauncher); err != nil || !ok || !slices.Equal(p.Args, append([]string{"--log-level", "warn"}, storeArgs...)) {
		t.Fatalf("process launcher %#v (%v): want worker args --log-level warn %q", pl, err, storeArgs)
	}
	mk := func(e policies.Executor) (fanout.Launcher, error) {
		return ls[policies.ExecutorKubernetes](e, hclog.NewNullLogger())
	}
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
	if args := job.Spec.Template.Spec.Containers[0].Args; !slices.Equal(args, append([]string{"run-unit", "--plan", "s3://b/t/_compactord/plans/p/plan.json"}, storeArgs...)) {
		t.Errorf("worker args %q: want the daemon's store flags %q after run-unit --plan", args, storeArgs)
	}
	if job.Namespace != "lake" || job.Spec.Template.Spec.ServiceAccountName != "compactord-worker" || job.Spec.Template.Spec.Containers[0].Image != "registry.example.com/compactord:v3" {
		t.Fatalf("job %s/%s service account %q image %q", job.Namespace, job.Name, job.Spec.Template.Spec.ServiceAccountName, job.Spec.Template.Spec.Containers[0].Image)
	}
	if again, err := mk(policies.Executor{Kind: policies.ExecutorKubernetes}); err != nil || again != first {
		t.Fatalf("second build: %v, %v; want the first launcher", again, err)
	}
}

// The Job of `run-plan --executor kubernetes` (its flags registered as
// run-plan registers them) runs its workers with the command's --store-*
// flags after run-unit --plan URL.
func TestTheKubernetesExecutorsWorkersInheritTheStoreFlags(t *testing.T) {
	t.Setenv("POD_NAME", "")
	t.Setenv("COMPACTORD_JOB_TEMPLATE", "")
	ctx := context.Background()
	fs := newCommandFlags(ctx, "run-plan", "warn", io.Discard)
	store := fs.addStoreFlags(io.Discard)
	var ef executorFlags
	ef.register(fs, store)
	if _, err := fs.parse([]string{"--executor", "kubernetes", "--kubeconfig", writeKubeconfig(t), "--kube-image", "c:1", "--store-read-idle-timeout", "5m"}); err != nil {
		t.Fatal(err)
	}
	var o compaction.RunOptions
	if err := ef.apply(ctx, &o, hclog.NewNullLogger()); err != nil {
		t.Fatal(err)
	}
	ex, ok := o.Executor.(*fanout.Executor)
	if !ok {
		t.Fatalf("executor %T", o.Executor)
	}
	kl, ok := ex.Launcher.(*kubernetes.Launcher)
	if !ok {
		t.Fatalf("launcher %T", ex.Launcher)
	}
	spec := fanout.LaunchSpec{PlanID: "p", PlanURL: "file:///t/_compactord/plans/p/plan.json", Units: 1}
	job, err := kl.Job(spec)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"run-unit", "--plan", spec.PlanURL, "--store-read-idle-timeout=5m0s"}
	if args := job.Spec.Template.Spec.Containers[0].Args; !slices.Equal(args, want) {
		t.Fatalf("worker args %q, want %q", args, want)
	}
}
