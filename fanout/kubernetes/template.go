package kubernetes

import (
	"fmt"
	"os"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	serializerjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"sigs.k8s.io/yaml"
)

// WorkerContainer is the name of the worker container in a Job template
// (a template with one container may name it otherwise).
const WorkerContainer = "worker"

// TemplateKey is the key of the Job template in the ConfigMap
// deploy/kubernetes/job-template.yaml defines (the daemon mounts it as a
// file of that name).
const TemplateKey = "job.yaml"

// LoadTemplate reads a Job template: a batch/v1 Job, or a v1 ConfigMap
// holding one under TemplateKey (deploy/kubernetes/job-template.yaml, which
// `kubectl apply -f deploy/kubernetes/` can apply without starting a Job).
// Both are decoded strictly: an unknown or misspelt field is an error.
func LoadTemplate(path string) (*batchv1.Job, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("job template: %w", err)
	}
	job, err := ParseTemplate(b)
	if err != nil {
		return nil, fmt.Errorf("job template %s: %w", path, err)
	}
	return job, nil
}

// ParseTemplate is LoadTemplate on the file's bytes.
func ParseTemplate(b []byte) (*batchv1.Job, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(b, &tm); err != nil {
		return nil, fmt.Errorf("not a Kubernetes object: %w", err)
	}
	switch {
	case tm.APIVersion == "v1" && tm.Kind == "ConfigMap":
		var cm corev1.ConfigMap
		if err := decodeStrict(b, &cm); err != nil {
			return nil, fmt.Errorf("ConfigMap: %w", err)
		}
		inner, ok := cm.Data[TemplateKey]
		if !ok {
			return nil, fmt.Errorf("ConfigMap %s has no key %s", cm.Name, TemplateKey)
		}
		var itm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(inner), &itm); err != nil || itm.Kind != "Job" {
			return nil, fmt.Errorf("ConfigMap %s key %s is not a batch/v1 Job", cm.Name, TemplateKey)
		}
		return ParseTemplate([]byte(inner))
	case tm.APIVersion == "batch/v1" && tm.Kind == "Job":
		var job batchv1.Job
		if err := decodeStrict(b, &job); err != nil {
			return nil, fmt.Errorf("Job: %w", err)
		}
		if err := checkTemplate(&job); err != nil {
			return nil, err
		}
		return &job, nil
	default:
		return nil, fmt.Errorf("apiVersion %q kind %q: want a batch/v1 Job or a v1 ConfigMap holding one under %s", tm.APIVersion, tm.Kind, TemplateKey)
	}
}

// decodeStrict decodes a YAML or JSON object into into (a Job or a
// ConfigMap) as the API server would, failing on unknown and duplicate
// fields and naming their paths.
func decodeStrict(b []byte, into runtime.Object) error {
	sch := runtime.NewScheme()
	if err := batchv1.AddToScheme(sch); err != nil {
		return err
	}
	if err := corev1.AddToScheme(sch); err != nil {
		return err
	}
	dec := serializerjson.NewSerializerWithOptions(serializerjson.DefaultMetaFactory, sch, sch,
		serializerjson.SerializerOptions{Yaml: true, Strict: true})
	_, _, err := dec.Decode(b, nil, into)
	return err
}

// DefaultTemplate is the Job template used when none is given: one worker
// container whose termination message falls back to its last log lines.
func DefaultTemplate() *batchv1.Job {
	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name:                     WorkerContainer,
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
		}}},
	}
}

// checkTemplate refuses a template that sets what the launcher owns (the
// Job's shape, identity and the worker's image and arguments) or that has no
// worker container.
func checkTemplate(job *batchv1.Job) error {
	s := job.Spec
	var owned []string
	for name, set := range map[string]bool{
		"metadata.name":                    job.Name != "" || job.GenerateName != "",
		"metadata.namespace":               job.Namespace != "",
		"metadata.ownerReferences":         len(job.OwnerReferences) > 0,
		"spec.completions":                 s.Completions != nil,
		"spec.parallelism":                 s.Parallelism != nil,
		"spec.completionMode":              s.CompletionMode != nil,
		"spec.backoffLimitPerIndex":        s.BackoffLimitPerIndex != nil,
		"spec.maxFailedIndexes":            s.MaxFailedIndexes != nil,
		"spec.podFailurePolicy":            s.PodFailurePolicy != nil,
		"spec.successPolicy":               s.SuccessPolicy != nil,
		"spec.selector":                    s.Selector != nil,
		"spec.manualSelector":              s.ManualSelector != nil,
		"spec.suspend":                     s.Suspend != nil,
		"spec.managedBy":                   s.ManagedBy != nil,
		"spec.template.spec.restartPolicy": s.Template.Spec.RestartPolicy != "" && s.Template.Spec.RestartPolicy != corev1.RestartPolicyNever,
	} {
		if set {
			owned = append(owned, name)
		}
	}
	if len(owned) > 0 {
		slices.Sort(owned)
		return fmt.Errorf("the template sets %s, which the launcher sets itself (restartPolicy may only be Never)", strings.Join(owned, ", "))
	}
	c, err := workerOf(&job.Spec.Template.Spec)
	if err != nil {
		return err
	}
	if c.Image != "" || len(c.Command) > 0 || len(c.Args) > 0 {
		return fmt.Errorf("container %s sets image, command or args: the launcher runs compactord's own image with run-unit --plan URL", c.Name)
	}
	return nil
}

// workerOf is the template's worker container: the one named
// WorkerContainer, or the only one.
func workerOf(pod *corev1.PodSpec) (*corev1.Container, error) {
	for i := range pod.Containers {
		if pod.Containers[i].Name == WorkerContainer {
			return &pod.Containers[i], nil
		}
	}
	if len(pod.Containers) == 1 {
		return &pod.Containers[0], nil
	}
	return nil, fmt.Errorf("the template has %d containers and none is named %s", len(pod.Containers), WorkerContainer)
}
