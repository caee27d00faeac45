package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/compactord/compactord/fanout"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

// Labels and annotations of the Jobs and pods the launcher creates.
const (
	// LabelPlan holds the plan's id (as a label value).
	LabelPlan = "compactord.io/plan"
	// LabelTable holds the table's name (the last element of its URL).
	LabelTable = "compactord.io/table"
	// AnnotationPlanURL and AnnotationTableURL hold the full URLs.
	AnnotationPlanURL  = "compactord.io/plan-url"
	AnnotationTableURL = "compactord.io/table-url"
)

// DefaultTTLAfterFinished is the Job's ttlSecondsAfterFinished when neither
// the Config nor the template sets one: the cluster deletes a finished Job
// the launcher could not delete (its coordinator died) after an hour.
const DefaultTTLAfterFinished = time.Hour

// Indexed Job limits of the API server's validation.
const (
	maxIndexedCompletions = 100000
	// maxJobName leaves room for "-<index>" in the pods' hostnames (63).
	maxJobName = 52
)

// JobName is the name of the Job that runs the plan planID: "compactord-"
// and the id as a DNS label, shortened with a hash when it does not fit.
func JobName(planID string) string {
	return dnsLabel("compactord-"+planID, maxJobName)
}

// Job is the Job the launcher creates for spec: the template filled with
// the Indexed Job shape, the pod failure policy, the image and the worker's
// arguments.
func (l *Launcher) Job(spec fanout.LaunchSpec) (*batchv1.Job, error) {
	if spec.Units < 1 || spec.Units > maxIndexedCompletions {
		return nil, fmt.Errorf("plan %s: %d units: an Indexed Job runs 1 to %d", spec.PlanID, spec.Units, maxIndexedCompletions)
	}
	if spec.PlanID == "" || spec.PlanURL == "" {
		return nil, fmt.Errorf("plan %q at %q: the launch spec needs a plan id and URL", spec.PlanID, spec.PlanURL)
	}
	if spec.BackoffLimitPerIndex < 0 {
		return nil, fmt.Errorf("plan %s: backoff limit per index %d is negative", spec.PlanID, spec.BackoffLimitPerIndex)
	}
	job := l.cfg.Template.DeepCopy()
	job.TypeMeta = metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}
	job.Name = JobName(spec.PlanID)
	job.Namespace = l.cfg.Namespace
	labels := map[string]string{
		"app.kubernetes.io/name":       "compactord",
		"app.kubernetes.io/component":  "unit-worker",
		"app.kubernetes.io/managed-by": "compactord",
		LabelPlan:                      labelValue(spec.PlanID),
		LabelTable:                     labelValue(tableName(spec.Table)),
	}
	annotations := map[string]string{AnnotationPlanURL: spec.PlanURL, AnnotationTableURL: spec.Table}
	job.Labels = merged(job.Labels, labels)
	job.Annotations = merged(job.Annotations, annotations)
	if l.cfg.Owner != nil {
		job.OwnerReferences = []metav1.OwnerReference{*l.cfg.Owner}
	}

	s := &job.Spec
	s.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	s.Completions = ptr.To(int32(spec.Units))
	s.Parallelism = ptr.To(int32(min(max(spec.Parallelism, 1), spec.Units)))
	s.BackoffLimitPerIndex = ptr.To(int32(spec.BackoffLimitPerIndex))
	if l.cfg.MaxFailedIndexes != nil {
		s.MaxFailedIndexes = ptr.To(min(*l.cfg.MaxFailedIndexes, int32(spec.Units)))
	}
	// A unit's next attempt starts once the last one has stopped, never
	// beside a terminating one (the default with a podFailurePolicy, said
	// here because the worker contract counts on it).
	s.PodReplacementPolicy = ptr.To(batchv1.Failed)
	switch {
	case l.cfg.TTLAfterFinished > 0:
		s.TTLSecondsAfterFinished = ptr.To(int32(l.cfg.TTLAfterFinished / time.Second))
	case s.TTLSecondsAfterFinished == nil:
		s.TTLSecondsAfterFinished = ptr.To(int32(DefaultTTLAfterFinished / time.Second))
	}

	pod := &s.Template
	pod.Labels = merged(pod.Labels, labels)
	pod.Annotations = merged(pod.Annotations, annotations)
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	if l.cfg.ServiceAccount != "" {
		pod.Spec.ServiceAccountName = l.cfg.ServiceAccount
	}
	c, err := workerOf(&pod.Spec)
	if err != nil {
		return nil, err
	}
	c.Image = l.cfg.Image
	c.Args = append([]string{"run-unit", "--plan", spec.PlanURL}, l.cfg.WorkerArgs...)
	c.Env = append(c.Env, l.cfg.Env...)
	for _, name := range l.cfg.EnvFromSecrets {
		c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: name},
		}})
	}
	if len(l.cfg.Resources.Requests) > 0 || len(l.cfg.Resources.Limits) > 0 {
		c.Resources = l.cfg.Resources
	}
	s.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{
			// Running a quarantined or halted unit again reads the same
			// bad object or refused table: fail its index at once.
			Action: batchv1.PodFailurePolicyActionFailIndex,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				ContainerName: ptr.To(c.Name),
				Operator:      batchv1.PodFailurePolicyOnExitCodesOpIn,
				Values:        []int32{fanout.ExitQuarantine, fanout.ExitHalt},
			},
		},
		{
			// A pod preempted, evicted or drained did not fail its unit.
			Action: batchv1.PodFailurePolicyActionIgnore,
			OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{
				Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			}},
		},
	}}
	return job, nil
}

// merged is dst with src's entries added (src wins).
func merged(dst, src map[string]string) map[string]string {
	out := make(map[string]string, len(dst)+len(src))
	maps.Copy(out, dst)
	maps.Copy(out, src)
	return out
}

// tableName is the last element of a table URL's path ("s3://b/x/events" →
// "events"), or the URL itself when it has none.
func tableName(table string) string {
	if u, err := url.Parse(table); err == nil && u.Path != "" {
		if b := path.Base(strings.TrimSuffix(u.Path, "/")); b != "." && b != "/" {
			return b
		}
	}
	return table
}

// labelValue is s when it is a valid label value (a plan id is:
// 20261201T162500.123Z-1a2b3c4d), else s as a DNS label.
func labelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	return dnsLabel(s, validation.LabelValueMaxLength)
}

// dnsLabel turns s into an RFC 1123 label of at most n characters
// (lowercase alphanumerics and '-', alphanumeric at both ends), which is
// also a valid label value. When s had to be changed or cut, a hash of s
// ends the result so that different inputs stay apart.
func dnsLabel(s string, n int) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(b.String(), "-")
	if out == s && len(out) <= n {
		return out
	}
	sum := sha256.Sum256([]byte(s))
	h := hex.EncodeToString(sum[:4])
	if keep := n - len(h) - 1; len(out) > keep {
		out = strings.TrimRight(out[:keep], "-")
	}
	if out == "" {
		return h
	}
	return out + "-" + h
}
