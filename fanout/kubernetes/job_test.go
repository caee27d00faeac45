package kubernetes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/compactord/compactord/fanout"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	serializerjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

const deployDir = "../../deploy/kubernetes/"

// strictDecoder decodes YAML or JSON into the API type its apiVersion and
// kind name, failing on unknown and duplicate fields.
func strictDecoder() runtime.Decoder {
	return serializerjson.NewSerializerWithOptions(serializerjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
		serializerjson.SerializerOptions{Yaml: true, Strict: true})
}

// decodeTyped decodes one object of type T strictly.
func decodeTyped[T runtime.Object](t *testing.T, b []byte) T {
	t.Helper()
	obj, _, err := strictDecoder().Decode(b, nil, nil)
	if err != nil {
		t.Fatalf("strict decoding: %v\n%s", err, b)
	}
	v, ok := obj.(T)
	if !ok {
		t.Fatalf("decoded a %T, want %T", obj, v)
	}
	return v
}

func TestTheCreatedJobDecodesStrictlyAsAnIndexedJobWithTheFailurePolicy(t *testing.T) {
	tmpl, err := LoadTemplate(deployDir + "job-template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	owner := &metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "compactord-7d9f-x2", UID: types.UID("uid-1")}
	l := newTestLauncher(t, client, func(c *Config) {
		c.Template = tmpl
		c.Owner = owner
		c.Env = []corev1.EnvVar{{Name: "AWS_REGION", Value: "eu-west-1"}}
		c.EnvFromSecrets = []string{"lake-credentials"}
		c.WorkerArgs = []string{"--store-attempts=9", "--store-timeout=2m0s"}
	})
	spec := testSpec(5)
	ctx, cancel := context.WithCancel(t.Context())
	r := startLaunch(ctx, t, l, spec)
	sent := createdJob(t, client)
	cancel()
	_ = r.wait()

	// What the API server would receive, as JSON and as YAML.
	for name, encode := range map[string]func(any) ([]byte, error){"json": json.Marshal, "yaml": yaml.Marshal} {
		t.Run(name, func(t *testing.T) {
			enc, err := encode(sent)
			if err != nil {
				t.Fatal(err)
			}
			job := decodeTyped[*batchv1.Job](t, enc)
			var again batchv1.Job
			if err := yaml.UnmarshalStrict(enc, &again); err != nil {
				t.Fatalf("sigs.k8s.io/yaml strict: %v", err)
			}
			checkJobShape(t, job, spec, "--store-attempts=9", "--store-timeout=2m0s")
			s := job.Spec
			if s.TTLSecondsAfterFinished == nil || *s.TTLSecondsAfterFinished != 3600 {
				t.Errorf("ttlSecondsAfterFinished = %v, want the template's 3600", s.TTLSecondsAfterFinished)
			}
			if s.MaxFailedIndexes != nil {
				t.Errorf("maxFailedIndexes = %d, want unset", *s.MaxFailedIndexes)
			}
			if len(job.OwnerReferences) != 1 || job.OwnerReferences[0] != *owner {
				t.Errorf("ownerReferences = %+v", job.OwnerReferences)
			}
			pod := s.Template.Spec
			if pod.ServiceAccountName != "compactord-worker" || pod.SecurityContext == nil || pod.SecurityContext.RunAsUser == nil {
				t.Errorf("the template's pod settings were lost: %+v", pod)
			}
			c := pod.Containers[0]
			if !slices.Contains(c.Env, corev1.EnvVar{Name: "AWS_REGION", Value: "eu-west-1"}) {
				t.Errorf("env = %+v, want AWS_REGION", c.Env)
			}
			var secrets []string
			for _, e := range c.EnvFrom {
				secrets = append(secrets, e.SecretRef.Name)
			}
			if !slices.Equal(secrets, []string{"compactord-store-credentials", "lake-credentials"}) {
				t.Errorf("envFrom secrets = %v", secrets)
			}
			if c.Resources.Limits.Memory().String() != "4Gi" || c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
				t.Errorf("the template's container settings were lost: %+v", c)
			}
		})
	}
}

// checkJobShape checks what the launcher owns in a Job for spec (the
// worker's args: run-unit --plan URL, then workerArgs), and the API
// server's rules for those fields.
func checkJobShape(t *testing.T, job *batchv1.Job, spec fanout.LaunchSpec, workerArgs ...string) {
	t.Helper()
	s := job.Spec
	if job.Namespace != testNS || job.Name != JobName(spec.PlanID) {
		t.Errorf("job %s/%s", job.Namespace, job.Name)
	}
	// The pods' hostnames are <job>-<index>: a DNS label too.
	if errs := validation.IsDNS1123Label(job.Name + "-99999"); len(errs) > 0 {
		t.Errorf("job name %q: %v", job.Name, errs)
	}
	for k, v := range job.Labels {
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("label %s=%q: %v", k, v, errs)
		}
	}
	if job.Labels[LabelPlan] != spec.PlanID || job.Labels[LabelTable] != "events" || job.Annotations[AnnotationPlanURL] != spec.PlanURL ||
		s.Template.Labels[LabelPlan] != spec.PlanID {
		t.Errorf("labels %v annotations %v pod labels %v", job.Labels, job.Annotations, s.Template.Labels)
	}
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("completionMode = %v", s.CompletionMode)
	}
	if s.Completions == nil || int(*s.Completions) != spec.Units || s.Parallelism == nil || int(*s.Parallelism) != spec.Parallelism {
		t.Errorf("completions %v parallelism %v, want %d and %d", s.Completions, s.Parallelism, spec.Units, spec.Parallelism)
	}
	if s.BackoffLimitPerIndex == nil || int(*s.BackoffLimitPerIndex) != spec.BackoffLimitPerIndex {
		t.Errorf("backoffLimitPerIndex = %v", s.BackoffLimitPerIndex)
	}
	if s.PodReplacementPolicy == nil || *s.PodReplacementPolicy != batchv1.Failed {
		t.Errorf("podReplacementPolicy = %v", s.PodReplacementPolicy)
	}
	pod := s.Template.Spec
	// The API server refuses a podFailurePolicy unless restartPolicy is Never.
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy = %q", pod.RestartPolicy)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("containers = %+v", pod.Containers)
	}
	c := pod.Containers[0]
	if c.Name != WorkerContainer || c.Image != "registry.example.com/compactord:v1" || !slices.Equal(c.Args, append([]string{"run-unit", "--plan", spec.PlanURL}, workerArgs...)) || len(c.Command) != 0 {
		t.Errorf("container %s image %s command %v args %v", c.Name, c.Image, c.Command, c.Args)
	}
	for _, e := range c.Env {
		if e.Name == fanout.IndexEnv {
			t.Errorf("the Job sets %s itself; the controller does", fanout.IndexEnv)
		}
	}
	p := s.PodFailurePolicy
	if p == nil || len(p.Rules) != 2 {
		t.Fatalf("podFailurePolicy = %+v", p)
	}
	fail, ignore := p.Rules[0], p.Rules[1]
	if fail.Action != batchv1.PodFailurePolicyActionFailIndex || fail.OnExitCodes == nil || fail.OnPodConditions != nil {
		t.Fatalf("rule 0 = %+v", fail)
	}
	ec := fail.OnExitCodes
	if ec.Operator != batchv1.PodFailurePolicyOnExitCodesOpIn || !slices.Equal(ec.Values, []int32{3, 4}) || ec.ContainerName == nil || *ec.ContainerName != c.Name {
		t.Errorf("rule 0 exit codes = %+v", ec)
	}
	if fanout.ExitQuarantine != 3 || fanout.ExitHalt != 4 {
		t.Errorf("the worker's exit codes moved: quarantine %d, halt %d", fanout.ExitQuarantine, fanout.ExitHalt)
	}
	// The API server's rules: values sorted, distinct, 0 not with In.
	if !slices.IsSorted(ec.Values) || len(slices.Compact(slices.Clone(ec.Values))) != len(ec.Values) || slices.Contains(ec.Values, 0) {
		t.Errorf("exit code values %v break the API's rules", ec.Values)
	}
	if ignore.Action != batchv1.PodFailurePolicyActionIgnore || ignore.OnExitCodes != nil ||
		!slices.Equal(ignore.OnPodConditions, []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}) {
		t.Errorf("rule 1 = %+v", ignore)
	}
}

func TestJobShapesTheSpec(t *testing.T) {
	long := strings.Repeat("Plan_", 20)
	for _, tc := range []struct {
		name            string
		spec            func(*fanout.LaunchSpec)
		maxFail         *int32
		wantParallelism int32
		wantMaxFail     *int32
		wantName        string
		wantPlanLabel   string // "": not checked but for validity
		wantErr         string
	}{
		{name: "as given", wantParallelism: 2, wantName: "compactord-p1"},
		{name: "parallelism 0 runs one", spec: func(s *fanout.LaunchSpec) { s.Parallelism = 0 }, wantParallelism: 1, wantName: "compactord-p1"},
		{name: "parallelism above the units", spec: func(s *fanout.LaunchSpec) { s.Parallelism = 50 }, wantParallelism: 5, wantName: "compactord-p1"},
		{name: "maxFailedIndexes at most the units", maxFail: ptr.To[int32](9), wantParallelism: 2, wantMaxFail: ptr.To[int32](5), wantName: "compactord-p1"},
		{name: "maxFailedIndexes kept", maxFail: ptr.To[int32](1), wantParallelism: 2, wantMaxFail: ptr.To[int32](1), wantName: "compactord-p1"},
		{name: "a plan id that is no DNS label", spec: func(s *fanout.LaunchSpec) { s.PlanID = "2026-12-01T15:00Z_a" }, wantParallelism: 2, wantName: "compactord-2026-12-01t15-00z-a-" + hashOf("compactord-2026-12-01T15:00Z_a")},
		{name: "a long plan id", spec: func(s *fanout.LaunchSpec) { s.PlanID = long }, wantParallelism: 2, wantName: "compactord-plan-plan-plan-plan-plan-plan-pl-" + hashOf("compactord-"+long)},
		{name: "a plan id of fanout.NewPlanID", spec: func(s *fanout.LaunchSpec) { s.PlanID = "20261201T162500.123Z-1a2b3c4d" }, wantParallelism: 2, wantName: "compactord-20261201t162500-123z-1a2b3c4d-" + hashOf("compactord-20261201T162500.123Z-1a2b3c4d"), wantPlanLabel: "20261201T162500.123Z-1a2b3c4d"},
		{name: "no units", spec: func(s *fanout.LaunchSpec) { s.Units = 0 }, wantErr: "0 units"},
		{name: "too many units", spec: func(s *fanout.LaunchSpec) { s.Units = 100001 }, wantErr: "1 to 100000"},
		{name: "no plan URL", spec: func(s *fanout.LaunchSpec) { s.PlanURL = "" }, wantErr: "needs a plan id and URL"},
		{name: "negative backoff", spec: func(s *fanout.LaunchSpec) { s.BackoffLimitPerIndex = -1 }, wantErr: "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLauncher(t, fake.NewClientset(), func(c *Config) { c.MaxFailedIndexes = tc.maxFail })
			spec := testSpec(5)
			if tc.spec != nil {
				tc.spec(&spec)
			}
			job, err := l.Job(spec)
			if endsInError(t, "Job", err, tc.wantErr) {
				return
			}
			if *job.Spec.Parallelism != tc.wantParallelism || !ptr.Equal(job.Spec.MaxFailedIndexes, tc.wantMaxFail) || job.Name != tc.wantName {
				t.Errorf("parallelism %d maxFailedIndexes %v name %q, want %d %v %q", *job.Spec.Parallelism, job.Spec.MaxFailedIndexes, job.Name, tc.wantParallelism, tc.wantMaxFail, tc.wantName)
			}
			if len(job.Name) > maxJobName || len(validation.IsDNS1123Label(job.Name)) > 0 || len(validation.IsValidLabelValue(job.Labels[LabelPlan])) > 0 {
				t.Errorf("name %q or plan label %q is not valid", job.Name, job.Labels[LabelPlan])
			}
			if tc.wantPlanLabel != "" && job.Labels[LabelPlan] != tc.wantPlanLabel {
				t.Errorf("plan label %q, want %q", job.Labels[LabelPlan], tc.wantPlanLabel)
			}
			if *job.Spec.TTLSecondsAfterFinished != 3600 {
				t.Errorf("ttl = %d, want DefaultTTLAfterFinished", *job.Spec.TTLSecondsAfterFinished)
			}
		})
	}
}

func TestLaunchOfNoUnitsCreatesNothing(t *testing.T) {
	client := fake.NewClientset()
	l := newTestLauncher(t, client, nil)
	if err := l.Launch(t.Context(), testSpec(0), func(fanout.UnitStatus) { t.Error("reported a unit") }); err != nil {
		t.Fatal(err)
	}
	if a := client.Actions(); len(a) != 0 {
		t.Fatalf("actions = %v", a)
	}
}

// hashOf is the hash suffix of a shortened name: 8 hex digits of s's SHA-256.
func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

func TestParseIndexes(t *testing.T) {
	for _, tc := range []struct {
		in      string
		n       int
		want    []int
		wantErr string
	}{
		{in: "", n: 3},
		{in: "0", n: 1, want: []int{0}},
		{in: "1,3-5", n: 6, want: []int{1, 3, 4, 5}},
		{in: "0-2,4,7-8", n: 9, want: []int{0, 1, 2, 4, 7, 8}},
		{in: "1,2", n: 3, want: []int{1, 2}},
		{in: "12", n: 13, want: []int{12}},
		{in: "3", n: 3, wantErr: "not below the Job's 3 completions"},
		{in: "0-3", n: 3, wantErr: "not below"},
		{in: "3,1", n: 5, wantErr: "not above the interval before it"},
		{in: "1-3,2", n: 5, wantErr: "not above"},
		{in: "1-3,3-4", n: 5, wantErr: "not above"},
		{in: "3-1", n: 5, wantErr: "does not increase"},
		{in: "2-2", n: 5, wantErr: "does not increase"},
		{in: "1,", n: 5, wantErr: `"" is not an index`},
		{in: "-1", n: 5, wantErr: `"" is not an index`},
		{in: "1-", n: 5, wantErr: `"" is not an index`},
		{in: " 1", n: 5, wantErr: `" 1" is not an index`},
		{in: "+1", n: 5, wantErr: `"+1" is not an index`},
		{in: "a", n: 5, wantErr: `"a" is not an index`},
		{in: "99999999999999999999", n: 5, wantErr: "is not an index"},
	} {
		got, err := parseIndexes(tc.in, tc.n)
		if endsInError(t, fmt.Sprintf("parseIndexes(%q, %d)", tc.in, tc.n), err, tc.wantErr) {
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("parseIndexes(%q, %d) = %v, %v; want %v", tc.in, tc.n, got, err, tc.want)
		}
	}
}
