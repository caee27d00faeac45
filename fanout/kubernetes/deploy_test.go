package kubernetes

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/policies"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/fake"
)

// manifests are the objects of deploy/kubernetes/, each decoded strictly
// into its API type.
type manifests struct {
	namespaces      []*corev1.Namespace
	serviceAccounts []*corev1.ServiceAccount
	configMaps      map[string]*corev1.ConfigMap
	services        []*corev1.Service
	deployments     []*appsv1.Deployment
	roles           []*rbacv1.Role
	roleBindings    []*rbacv1.RoleBinding
}

func loadManifests(t *testing.T) manifests {
	t.Helper()
	files, err := filepath.Glob(deployDir + "*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s: %v", deployDir, err)
	}
	m := manifests{configMaps: map[string]*corev1.ConfigMap{}}
	dec := strictDecoder()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
		for n := 0; ; n++ {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s document %d: %v", f, n, err)
			}
			if len(bytes.TrimSpace(stripComments(doc))) == 0 {
				continue
			}
			obj, _, err := dec.Decode(doc, nil, nil)
			if err != nil {
				t.Fatalf("%s document %d: %v", f, n, err)
			}
			switch o := obj.(type) {
			case *corev1.Namespace:
				m.namespaces = append(m.namespaces, o)
			case *corev1.ServiceAccount:
				m.serviceAccounts = append(m.serviceAccounts, o)
			case *corev1.ConfigMap:
				m.configMaps[o.Name] = o
			case *corev1.Service:
				m.services = append(m.services, o)
			case *appsv1.Deployment:
				m.deployments = append(m.deployments, o)
			case *rbacv1.Role:
				m.roles = append(m.roles, o)
			case *rbacv1.RoleBinding:
				m.roleBindings = append(m.roleBindings, o)
			default:
				t.Fatalf("%s document %d: unexpected %T", f, n, obj)
			}
		}
	}
	return m
}

// stripComments drops the comment lines of a YAML document.
func stripComments(doc []byte) []byte {
	var out []byte
	for line := range bytes.Lines(doc) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line...)
		}
	}
	return out
}

func TestTheManifestsDecodeStrictlyAndFitTogether(t *testing.T) {
	m := loadManifests(t)
	if len(m.namespaces) != 1 || len(m.deployments) != 1 || len(m.services) != 1 || len(m.roles) != 1 || len(m.roleBindings) != 1 {
		t.Fatalf("manifests: %d namespaces, %d deployments, %d services, %d roles, %d role bindings; want one each",
			len(m.namespaces), len(m.deployments), len(m.services), len(m.roles), len(m.roleBindings))
	}
	ns := m.namespaces[0].Name
	sas := map[string]bool{}
	for _, sa := range m.serviceAccounts {
		sas[sa.Name] = true
	}
	d := m.deployments[0]
	pod := d.Spec.Template
	for _, o := range []interface{ GetNamespace() string }{d, m.services[0], m.roles[0], m.roleBindings[0]} {
		if o.GetNamespace() != ns {
			t.Errorf("%T in namespace %q, want %q", o, o.GetNamespace(), ns)
		}
	}

	t.Run("deployment", func(t *testing.T) {
		if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
			t.Errorf("replicas = %v, want several", d.Spec.Replicas)
		}
		for k, v := range d.Spec.Selector.MatchLabels {
			if pod.Labels[k] != v {
				t.Errorf("the selector's %s=%s is not on the pods", k, v)
			}
		}
		if !sas[pod.Spec.ServiceAccountName] {
			t.Errorf("service account %q is not defined", pod.Spec.ServiceAccountName)
		}
		c := pod.Spec.Containers[0]
		if c.Name != DaemonContainer {
			t.Errorf("container %q: Discover reads the image of the container named %s", c.Name, DaemonContainer)
		}
		env := map[string]corev1.EnvVar{}
		for _, e := range c.Env {
			env[e.Name] = e
		}
		// Distinct replica names: each pod's own name, by the downward API.
		if e := env[EnvPodName]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
			t.Errorf("%s = %+v, want the downward API's metadata.name", EnvPodName, e)
		}
		if e := env[EnvPodNamespace]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
			t.Errorf("%s = %+v, want the downward API's metadata.namespace", EnvPodNamespace, e)
		}
		if i := slices.Index(c.Args, "--replica"); i < 0 || i+1 >= len(c.Args) || c.Args[i+1] != "$("+EnvPodName+")" {
			t.Errorf("args %v: want --replica $(%s)", c.Args, EnvPodName)
		}
		mounts := map[string]string{}
		for _, vm := range c.VolumeMounts {
			mounts[vm.Name] = vm.MountPath
		}
		for _, v := range pod.Spec.Volumes {
			if v.ConfigMap != nil && m.configMaps[v.ConfigMap.Name] == nil {
				t.Errorf("volume %s: ConfigMap %s is not defined", v.Name, v.ConfigMap.Name)
			}
			if _, ok := mounts[v.Name]; !ok {
				t.Errorf("volume %s is not mounted", v.Name)
			}
		}
		if i := slices.Index(c.Args, "--policies"); i < 0 || c.Args[i+1] != mounts["policies"] {
			t.Errorf("--policies in %v is not where the policies volume is mounted (%s)", c.Args, mounts["policies"])
		}
		if got, want := env["COMPACTORD_JOB_TEMPLATE"].Value, mounts["job-template"]+"/"+TemplateKey; got != want {
			t.Errorf("COMPACTORD_JOB_TEMPLATE = %q, want %q", got, want)
		}
		if i := slices.Index(c.Args, "--http"); i < 0 || !strings.HasSuffix(c.Args[i+1], ":9464") || len(c.Ports) != 1 || c.Ports[0].ContainerPort != 9464 {
			t.Errorf("args %v ports %+v: want --http on the container's port 9464", c.Args, c.Ports)
		}
	})

	t.Run("service", func(t *testing.T) {
		s := m.services[0]
		for k, v := range s.Spec.Selector {
			if pod.Labels[k] != v {
				t.Errorf("the service selects %s=%s, which the daemon's pods lack", k, v)
			}
		}
		if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].TargetPort.StrVal != pod.Spec.Containers[0].Ports[0].Name {
			t.Errorf("service ports %+v do not target the container's port %s", s.Spec.Ports, pod.Spec.Containers[0].Ports[0].Name)
		}
	})

	t.Run("policies", func(t *testing.T) {
		cm := m.configMaps["compactord-policies"]
		if cm == nil {
			t.Fatal("no ConfigMap compactord-policies")
		}
		files := map[string][]byte{}
		for k, v := range cm.Data {
			files[k] = []byte(v)
		}
		set, err := policies.Parse(files)
		if err != nil {
			t.Fatal(err)
		}
		if len(set.Tables) == 0 {
			t.Fatal("the example policy has no table")
		}
		if e := set.Tables[0].Executor; e == nil || e.Kind != policies.ExecutorKubernetes {
			t.Errorf("the example table's executor = %+v, want kind kubernetes", e)
		}
	})

	t.Run("job template", func(t *testing.T) {
		cm := m.configMaps["compactord-job-template"]
		if cm == nil {
			t.Fatal("no ConfigMap compactord-job-template")
		}
		job := decodeTyped[*batchv1.Job](t, []byte(cm.Data[TemplateKey]))
		if _, err := ParseTemplate([]byte(cm.Data[TemplateKey])); err != nil {
			t.Fatal(err)
		}
		if sa := job.Spec.Template.Spec.ServiceAccountName; !sas[sa] {
			t.Errorf("the workers' service account %q is not defined", sa)
		}
	})

	t.Run("role binding", func(t *testing.T) {
		rb := m.roleBindings[0]
		if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != m.roles[0].Name {
			t.Errorf("roleRef = %+v, want Role %s", rb.RoleRef, m.roles[0].Name)
		}
		if len(rb.Subjects) != 1 || rb.Subjects[0].Kind != "ServiceAccount" || rb.Subjects[0].Name != pod.Spec.ServiceAccountName || rb.Subjects[0].Namespace != ns {
			t.Errorf("subjects = %+v, want the daemon's service account", rb.Subjects)
		}
	})
}

// TestTheRoleAllowsExactlyWhatTheLauncherCalls runs the launcher through
// its paths on a fake clientset (a launch that completes, one whose Job is
// deleted, one canceled, Discover) and checks every call it made against
// the Role's rules, and that the Role grants nothing it did not use.
func TestTheRoleAllowsExactlyWhatTheLauncherCalls(t *testing.T) {
	role := loadManifests(t).roles[0]
	client := fake.NewClientset()
	pod := &corev1.Pod{}
	pod.Name, pod.Namespace = "compactord-0", testNS
	pod.Spec.Containers = []corev1.Container{{Name: DaemonContainer, Image: "registry.example.com/compactord:v1"}}
	if err := client.Tracker().Add(pod); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Client: client}
	getenv := func(k string) string { return map[string]string{EnvPodName: pod.Name, EnvPodNamespace: testNS}[k] }
	if err := Discover(t.Context(), &cfg, getenv); err != nil {
		t.Fatal(err)
	}
	l := newTestLauncher(t, client, func(c *Config) { c.Image, c.Owner = cfg.Image, cfg.Owner })

	for i, end := range []func(job string){
		func(job string) { // completes
			putPod(t, client, job, testPod{index: 0, phase: corev1.PodSucceeded, exitCode: exited(0)})
			setJobStatus(t, client, job, func(s *batchv1.JobStatus) { s.CompletedIndexes = "0" })
		},
		func(job string) { // deleted by someone else
			if err := client.Tracker().Delete(jobsGVR, testNS, job); err != nil {
				t.Fatal(err)
			}
		},
		nil, // canceled
	} {
		spec := testSpec(1)
		spec.PlanID = string(rune('a' + i))
		ctx, cancel := context.WithCancel(t.Context())
		r := startLaunch(ctx, t, l, spec)
		eventually(t, "the Job", func() bool { return !jobGone(client, JobName(spec.PlanID)) })
		if end != nil {
			end(JobName(spec.PlanID))
		} else {
			cancel()
		}
		_ = r.wait()
		cancel()
	}

	used := map[string]bool{} // "group/resource verb"
	for _, a := range client.Actions() {
		gr := a.GetResource().Group + "/" + a.GetResource().Resource
		if a.GetSubresource() != "" {
			gr += "/" + a.GetSubresource()
		}
		used[gr+" "+a.GetVerb()] = true
		if !allows(role.Rules, a.GetResource().Group, a.GetResource().Resource, a.GetSubresource(), a.GetVerb()) {
			t.Errorf("the Role does not allow %s %s (namespace %s)", a.GetVerb(), gr, a.GetNamespace())
		}
	}
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					if !used[g+"/"+res+" "+v] {
						t.Errorf("the Role grants %s %s/%s, which the launcher never calls", v, g, res)
					}
				}
			}
		}
	}
	if len(used) == 0 {
		t.Fatal("no calls recorded")
	}
}

// allows is RBAC's rule match for a namespaced request (no wildcards in our
// Role, so none are honoured here).
func allows(rules []rbacv1.PolicyRule, group, resource, sub, verb string) bool {
	if sub != "" {
		resource += "/" + sub
	}
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}

// client-go reaches the binary through this package alone: the daemon's
// core (runner, its operations, the scheduler, the fanout executor and its
// workers) links none of it.
func TestOnlyThisPackageLinksClientGo(t *testing.T) {
	for _, d := range testutil.Deps(t, "../../runner/...", "../../scheduler/...", "../../compaction/...", "../../policies/...", "..") {
		if strings.HasPrefix(d, "k8s.io/") || strings.HasPrefix(d, "sigs.k8s.io/") {
			t.Errorf("the daemon's core links %s", d)
		}
	}
}
