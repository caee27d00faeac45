package kubernetes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

// jobYAML is a Job template with extra lines in its spec and in its one
// container.
func jobYAML(spec, container string) string {
	return "apiVersion: batch/v1\nkind: Job\nspec:\n" + spec + "  template:\n    spec:\n      containers:\n        - name: worker\n" + container
}

func TestParseTemplateRefusesWhatTheLauncherOwnsAndUnknownFields(t *testing.T) {
	for _, tc := range []struct {
		name, in, wantErr string
	}{
		{name: "plain", in: jobYAML("", "")},
		{name: "kept settings", in: jobYAML("  activeDeadlineSeconds: 600\n", "          resources:\n            limits:\n              memory: 1Gi\n")},
		{name: "restartPolicy Never", in: jobYAML("", "") + "      restartPolicy: Never\n"},
		{name: "one container of another name", in: strings.Replace(jobYAML("", ""), "name: worker", "name: rewrite", 1)},
		{name: "ConfigMap", in: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: t\ndata:\n  job.yaml: |\n" + indent(jobYAML("", ""), "    ")},
		{name: "unknown field", in: jobYAML("  completionsMode: Indexed\n", ""), wantErr: `unknown field "spec.completionsMode"`},
		{name: "unknown container field", in: jobYAML("", "          imag: x\n"), wantErr: `unknown field "spec.template.spec.containers[0].imag"`},
		{name: "duplicate field", in: jobYAML("  parallelism: 1\n  parallelism: 2\n", ""), wantErr: "parallelism"},
		{name: "completions", in: jobYAML("  completions: 3\n  parallelism: 2\n", ""), wantErr: "sets spec.completions, spec.parallelism, which the launcher sets"},
		{name: "pod failure policy", in: jobYAML("  podFailurePolicy:\n    rules: []\n", ""), wantErr: "spec.podFailurePolicy"},
		{name: "non-indexed", in: jobYAML("  completionMode: NonIndexed\n", ""), wantErr: "spec.completionMode"},
		{name: "suspended", in: jobYAML("  suspend: true\n", ""), wantErr: "spec.suspend"},
		{name: "a name", in: strings.Replace(jobYAML("", ""), "spec:\n", "metadata:\n  name: x\nspec:\n", 1), wantErr: "metadata.name"},
		{name: "restartPolicy OnFailure", in: jobYAML("", "") + "      restartPolicy: OnFailure\n", wantErr: "restartPolicy"},
		{name: "image", in: jobYAML("", "          image: busybox\n"), wantErr: "sets image, command or args"},
		{name: "args", in: jobYAML("", "          args: [run]\n"), wantErr: "sets image, command or args"},
		{name: "no worker among two", in: jobYAML("", "        - name: sidecar\n") + "", wantErr: ""},
		{name: "two containers, none a worker", in: strings.Replace(jobYAML("", "        - name: sidecar\n"), "name: worker", "name: main", 1), wantErr: "2 containers and none is named worker"},
		{name: "ConfigMap without the key", in: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: t\ndata:\n  other: x\n", wantErr: "has no key job.yaml"},
		{name: "ConfigMap holding no Job", in: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: t\ndata:\n  job.yaml: |\n    kind: Pod\n", wantErr: "is not a batch/v1 Job"},
		{name: "ConfigMap unknown field", in: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: t\ndatas: {}\n", wantErr: `unknown field "datas"`},
		{name: "another kind", in: "apiVersion: apps/v1\nkind: Deployment\n", wantErr: `kind "Deployment": want a batch/v1 Job`},
		{name: "not YAML", in: "{", wantErr: "not a Kubernetes object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job, err := ParseTemplate([]byte(tc.in))
			if endsInError(t, "ParseTemplate", err, tc.wantErr) {
				return
			}
			if _, err := workerOf(&job.Spec.Template.Spec); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func indent(s, by string) string {
	return by + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+by) + "\n"
}

func TestDiscoverFindsTheDaemonsImageAndPod(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "compactord-5c9-abcde", Namespace: "compactord", UID: types.UID("u-1")},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "log-shipper", Image: "fluent-bit:3"},
			{Name: DaemonContainer, Image: "registry.example.com/compactord@sha256:abc"},
		}},
	}
	self := &metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}
	inPod := map[string]string{EnvPodName: pod.Name, EnvPodNamespace: pod.Namespace}
	for _, tc := range []struct {
		name      string
		env       map[string]string
		cfg       Config
		wantNS    string
		wantImage string
		wantOwner *metav1.OwnerReference
		wantErr   string
	}{
		{name: "in the daemon's pod", env: inPod, wantNS: "compactord", wantImage: "registry.example.com/compactord@sha256:abc", wantOwner: self},
		{name: "COMPACTORD_IMAGE wins", env: with(inPod, EnvImage, "mine:1"), wantNS: "compactord", wantImage: "mine:1", wantOwner: self},
		{name: "Jobs in another namespace have no owner", env: inPod, cfg: Config{Namespace: "batch"}, wantNS: "batch", wantImage: "registry.example.com/compactord@sha256:abc"},
		{name: "outside a pod", env: map[string]string{EnvImage: "mine:1"}, wantImage: "mine:1"},
		{name: "a pod that is not there", env: with(inPod, EnvPodName, "gone"), wantErr: "discover the daemon's own pod compactord/gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Client = fake.NewClientset(pod)
			err := Discover(t.Context(), &cfg, func(k string) string { return tc.env[k] })
			if endsInError(t, "Discover", err, tc.wantErr) {
				return
			}
			if cfg.Namespace != tc.wantNS || cfg.Image != tc.wantImage || (cfg.Owner == nil) != (tc.wantOwner == nil) || cfg.Owner != nil && *cfg.Owner != *tc.wantOwner {
				t.Errorf("namespace %q image %q owner %+v, want %q %q %+v", cfg.Namespace, cfg.Image, cfg.Owner, tc.wantNS, tc.wantImage, tc.wantOwner)
			}
		})
	}
}

func with(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for mk, mv := range m {
		if mk != k {
			out[mk] = mv
		}
	}
	return out
}

func TestNewConnectsThroughAKubeconfigAndFillsTheGaps(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
  - name: c
    cluster: {server: "https://127.0.0.1:1"}
users:
  - name: u
    user: {token: "t"}
contexts:
  - name: lake
    context: {cluster: c, user: u, namespace: lakehouse}
  - name: other
    context: {cluster: c, user: u}
current-context: lake
`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{EnvImage: "registry.example.com/compactord:v2", EnvJobTemplate: deployDir + "job-template.yaml"}
	for _, tc := range []struct {
		name    string
		o       Options
		env     map[string]string
		wantNS  string
		wantSA  string
		wantErr string
	}{
		{name: "the kubeconfig's namespace and the environment's template", env: env, wantNS: "lakehouse", wantSA: "compactord-worker"},
		{name: "the template flag wins over the environment", o: Options{JobTemplate: "testdata/none.yaml"}, env: env, wantErr: "job template: open testdata/none.yaml"},
		{name: "a context without a namespace", o: Options{Context: "other"}, env: map[string]string{EnvImage: "x:1"}, wantNS: "default"},
		{name: "no image", env: map[string]string{}, wantErr: "set COMPACTORD_IMAGE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.Kubeconfig = kubeconfig
			l, err := New(t.Context(), o, func(k string) string { return tc.env[k] })
			if endsInError(t, "New", err, tc.wantErr) {
				return
			}
			job, err := l.Job(testSpec(2))
			if err != nil {
				t.Fatal(err)
			}
			if job.Namespace != tc.wantNS || job.Spec.Template.Spec.ServiceAccountName != tc.wantSA || job.Spec.Template.Spec.Containers[0].Image != tc.env[EnvImage] {
				t.Errorf("namespace %q service account %q image %q", job.Namespace, job.Spec.Template.Spec.ServiceAccountName, job.Spec.Template.Spec.Containers[0].Image)
			}
		})
	}
}
