package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/compactord/compactord/fanout"
	"github.com/compactord/compactord/objstore"
	"github.com/hashicorp/go-hclog"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	batchv1client "k8s.io/client-go/kubernetes/typed/batch/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/ptr"
)

// Client is the part of the Kubernetes API the launcher calls: Jobs and
// pods (client-go's kubernetes.Interface and its fake satisfy it; Connect
// builds just these two groups' clients, which keeps the other groups'
// out of the binary).
type Client interface {
	BatchV1() batchv1client.BatchV1Interface
	CoreV1() corev1client.CoreV1Interface
}

// Config says where and how the launcher runs a plan's workers.
type Config struct {
	// Client talks to the cluster (Connect builds one from in-cluster
	// config or a kubeconfig).
	Client Client
	// Namespace is where the Jobs are created (required).
	Namespace string
	// Image is the workers' image: compactord's own (required; Discover
	// finds it from COMPACTORD_IMAGE or the daemon's own pod).
	Image string
	// Template is the Job the launcher fills (LoadTemplate); nil:
	// DefaultTemplate.
	Template *batchv1.Job
	// ServiceAccount runs the worker pods (empty: the template's, else the
	// namespace's default).
	ServiceAccount string
	// Resources replace the worker container's when they set requests or
	// limits.
	Resources corev1.ResourceRequirements
	// Env is added to the worker container's environment.
	Env []corev1.EnvVar
	// EnvFromSecrets names Secrets whose keys become the worker's
	// environment variables (object-store credentials).
	EnvFromSecrets []string
	// WorkerArgs are more flags of the worker container after `run-unit
	// --plan URL` (cmd/compactord passes the coordinator's --store-*
	// flags, so that the workers use the same store deadlines and retries).
	WorkerArgs []string
	// TTLAfterFinished is the Job's ttlSecondsAfterFinished (0: the
	// template's, else DefaultTTLAfterFinished). The launcher deletes the
	// Job itself when a launch ends; the TTL covers a coordinator that died.
	TTLAfterFinished time.Duration
	// MaxFailedIndexes, when set, fails the whole Job (and so every unit not
	// yet final) once that many units have failed; nil lets every unit run
	// whatever the others do, since each finished unit is committed on its
	// own.
	MaxFailedIndexes *int32
	// Owner, when set, is the Job's owner reference (Discover sets the
	// daemon's own pod), so that the cluster deletes the Job and its workers
	// when their coordinator is gone.
	Owner *metav1.OwnerReference
	// Resync is how often the Job is read again besides watching it (0:
	// 30s); a watch that ends is started again at once.
	Resync time.Duration
	// StopTimeout bounds the end of a launch (0: 2m): deleting the Job and
	// waiting until none of its pods runs (they get their
	// terminationGracePeriodSeconds), so that whoever cleans up after the
	// launch races no worker. It runs after ctx has ended.
	StopTimeout time.Duration
	// Log receives the launcher's progress (nil: none).
	Log hclog.Logger
}

// Launcher is the fanout.Launcher that runs a plan as an Indexed Job.
type Launcher struct {
	cfg Config
}

var _ fanout.Launcher = (*Launcher)(nil)

// ErrJobGone is wrapped by Launch's error when the Job was deleted by
// someone else before all its units were final; those units are reported
// failed first.
var ErrJobGone = errors.New("the Job was deleted before its units finished")

// NewLauncher checks cfg and returns a launcher. A Template set in code is
// checked as LoadTemplate checks a file's.
func NewLauncher(cfg Config) (*Launcher, error) {
	if cfg.Client == nil {
		return nil, errors.New("kubernetes launcher: no client")
	}
	if cfg.Namespace == "" {
		return nil, errors.New("kubernetes launcher: no namespace")
	}
	if cfg.Image == "" {
		return nil, errors.New("kubernetes launcher: no worker image (set COMPACTORD_IMAGE, or run the daemon in a pod with POD_NAME and POD_NAMESPACE from the downward API)")
	}
	if cfg.Template == nil {
		cfg.Template = DefaultTemplate()
	} else if err := checkTemplate(cfg.Template); err != nil {
		return nil, fmt.Errorf("kubernetes launcher: job template: %w", err)
	}
	if cfg.Resync <= 0 {
		cfg.Resync = 30 * time.Second
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = 2 * time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	return &Launcher{cfg: cfg}, nil
}

// Launch creates the plan's Indexed Job, watches it, and reports each unit
// once as its index appears in the Job's completedIndexes or failedIndexes
// (a failed unit's exit code and reason come from its newest pod). When the
// Job fails as a whole or is deleted by someone else, the units not yet
// final are reported failed once no worker of the Job is still running.
// Launch deletes the Job (propagation Background: the cluster removes its
// pods) when every unit is final, and when ctx ends, and returns once none
// of its pods runs (or StopTimeout has passed).
func (l *Launcher) Launch(ctx context.Context, spec fanout.LaunchSpec, report func(fanout.UnitStatus)) (err error) {
	if spec.Units == 0 {
		return nil
	}
	job, err := l.Job(spec)
	if err != nil {
		return err
	}
	log := l.cfg.Log.With("job", job.Name, "namespace", job.Namespace, "plan", spec.PlanID)
	jobs := l.cfg.Client.BatchV1().Jobs(l.cfg.Namespace)
	created, err := jobs.Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("plan %s: create Job %s/%s: a Job of that name exists already (plan ids are unique; another coordinator runs this plan, or a finished Job waits for its TTL): %w", spec.PlanID, job.Namespace, job.Name, err)
		}
		// A create that timed out may still have happened.
		l.stop(ctx, log, job.Name)
		return fmt.Errorf("plan %s: create Job %s/%s: %w", spec.PlanID, job.Namespace, job.Name, err)
	}
	log.Info("job created", "units", spec.Units, "parallelism", *job.Spec.Parallelism, "backoff_limit_per_index", spec.BackoffLimitPerIndex)
	defer l.stop(ctx, log, created.Name)
	w := &watcher{l: l, log: log, name: created.Name, units: spec.Units, report: report, final: make([]bool, spec.Units)}
	if err := w.run(ctx); err != nil {
		return fmt.Errorf("plan %s: Job %s/%s: %w", spec.PlanID, job.Namespace, job.Name, err)
	}
	return nil
}

// stop deletes the Job, letting the cluster remove its pods, and waits
// until none of them runs. It runs when ctx may have ended already,
// bounded by StopTimeout.
func (l *Launcher) stop(ctx context.Context, log hclog.Logger, name string) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.StopTimeout)
	defer cancel()
	err := l.cfg.Client.BatchV1().Jobs(l.cfg.Namespace).Delete(sctx, name, metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
	})
	switch {
	case err == nil:
		log.Debug("job deleted")
	case apierrors.IsNotFound(err):
	default:
		log.Warn("could not delete the job; its ttlSecondsAfterFinished or owner reference removes it", "error", err)
		return
	}
	for {
		pods, err := l.pods(sctx, log, name)
		if err != nil {
			log.Warn("the job's workers may still run", "error", err)
			return
		}
		if !anyRunning(pods) {
			return
		}
		if err := objstore.Sleep(sctx, l.cfg.Resync); err != nil {
			log.Warn("the job's workers still run", "timeout", l.cfg.StopTimeout)
			return
		}
	}
}

// watcher follows one Job until every unit is final.
type watcher struct {
	l      *Launcher
	log    hclog.Logger
	name   string
	units  int
	report func(fanout.UnitStatus)
	final  []bool
	nfinal int
}

// run reads the Job, then watches it from that version; a watch that ends
// or expires, and every Resync, reads it again.
func (w *watcher) run(ctx context.Context) error {
	jobs := w.l.cfg.Client.BatchV1().Jobs(w.l.cfg.Namespace)
	for {
		job, err := jobs.Get(ctx, w.name, metav1.GetOptions{})
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case apierrors.IsNotFound(err):
			return w.gone(ctx)
		case err != nil:
			if fatal(err) {
				return fmt.Errorf("read: %w", err)
			}
			w.log.Warn("reading the job failed; trying again", "error", err)
			if err := objstore.Sleep(ctx, w.l.cfg.Resync); err != nil {
				return err
			}
			continue
		}
		done, err := w.observe(ctx, job)
		if done || err != nil {
			return err
		}
		done, err = w.watch(ctx, job.ResourceVersion)
		if done || err != nil {
			return err
		}
	}
}

// watch follows the Job's events from version rv until the watch ends,
// Resync passes, or the launch is done.
func (w *watcher) watch(ctx context.Context, rv string) (bool, error) {
	wi, err := w.l.cfg.Client.BatchV1().Jobs(w.l.cfg.Namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", w.name).String(),
		ResourceVersion: rv,
	})
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if fatal(err) {
			return false, fmt.Errorf("watch: %w", err)
		}
		w.log.Warn("watching the job failed; reading it again", "error", err)
		return false, objstore.Sleep(ctx, w.l.cfg.Resync)
	}
	defer wi.Stop()
	resync := time.NewTimer(w.l.cfg.Resync)
	defer resync.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-resync.C:
			return false, nil
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return false, nil
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				job, ok := ev.Object.(*batchv1.Job)
				if !ok || job.Name != w.name {
					continue
				}
				if done, err := w.observe(ctx, job); done || err != nil {
					return done, err
				}
			case watch.Deleted:
				if job, ok := ev.Object.(*batchv1.Job); ok && job.Name == w.name {
					return false, nil // run reads it again: NotFound, or a new Job
				}
			case watch.Error:
				// Mostly 410 Gone: the version is too old. Read again.
				w.log.Debug("the job watch ended", "error", apierrors.FromObject(ev.Object))
				return false, nil
			}
		}
	}
}

// observe reports the units the Job's status shows final for the first
// time, and the rest when the Job itself has finished. It says whether
// every unit is final.
func (w *watcher) observe(ctx context.Context, job *batchv1.Job) (bool, error) {
	completed, err := parseIndexes(job.Status.CompletedIndexes, w.units)
	if err != nil {
		return false, fmt.Errorf("status.completedIndexes: %w", err)
	}
	var failed []int
	if job.Status.FailedIndexes != nil {
		if failed, err = parseIndexes(*job.Status.FailedIndexes, w.units); err != nil {
			return false, fmt.Errorf("status.failedIndexes: %w", err)
		}
	}
	completed, failed = w.fresh(completed), w.fresh(failed)
	cond := finished(job)
	if len(completed)+len(failed) == 0 && cond == nil {
		return false, nil
	}
	pods, err := w.pods(ctx)
	if err != nil {
		return false, err
	}
	for _, i := range completed {
		w.emit(fanout.UnitStatus{Index: i, Succeeded: true, ExitCode: fanout.ExitOK, Attempts: attempts(pods[i])})
	}
	for _, i := range failed {
		w.emit(failedStatus(i, pods[i], "its index failed"))
	}
	if cond != nil {
		why := fmt.Sprintf("the Job is %s (%s: %s)", cond.Type, cond.Reason, cond.Message)
		for i := range w.final {
			if !w.final[i] {
				w.emit(failedStatus(i, pods[i], why))
			}
		}
	}
	return w.nfinal == w.units, nil
}

// gone reports the units not yet final as failed after the Job was deleted
// by someone else, once none of its pods runs any more.
func (w *watcher) gone(ctx context.Context) error {
	w.log.Warn("the job was deleted before its units finished; waiting for its pods to stop", "final", w.nfinal, "units", w.units)
	for {
		pods, err := w.pods(ctx)
		if err != nil {
			return err
		}
		if !anyRunning(pods) {
			for i := range w.final {
				if !w.final[i] {
					w.emit(failedStatus(i, pods[i], "the Job was deleted"))
				}
			}
			return ErrJobGone
		}
		if err := objstore.Sleep(ctx, w.l.cfg.Resync); err != nil {
			return err
		}
	}
}

// fresh is the indexes of is not yet reported.
func (w *watcher) fresh(is []int) []int {
	var out []int
	for _, i := range is {
		if !w.final[i] {
			out = append(out, i)
		}
	}
	return out
}

// emit reports st once.
func (w *watcher) emit(st fanout.UnitStatus) {
	if w.final[st.Index] {
		return
	}
	w.final[st.Index] = true
	w.nfinal++
	if st.Succeeded {
		w.log.Debug("unit succeeded", "unit", st.Index, "attempts", st.Attempts)
	} else {
		w.log.Warn("unit failed", "unit", st.Index, "exit_code", st.ExitCode, "attempts", st.Attempts, "reason", st.Reason)
	}
	w.report(st)
}

// pods lists the Job's pods by unit index.
func (w *watcher) pods(ctx context.Context) (map[int][]corev1.Pod, error) {
	return w.l.pods(ctx, w.log, w.name)
}

// pods lists the pods of Job name by unit index (retrying transient
// failures until ctx ends).
func (l *Launcher) pods(ctx context.Context, log hclog.Logger, name string) (map[int][]corev1.Pod, error) {
	sel := labels.SelectorFromSet(labels.Set{batchv1.JobNameLabel: name}).String()
	for {
		list, err := l.cfg.Client.CoreV1().Pods(l.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err == nil {
			out := make(map[int][]corev1.Pod)
			for _, p := range list.Items {
				if i, ok := podIndex(&p); ok {
					out[i] = append(out[i], p)
				}
			}
			return out, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if fatal(err) {
			return nil, fmt.Errorf("list pods: %w", err)
		}
		log.Warn("listing the job's pods failed; trying again", "error", err)
		if err := objstore.Sleep(ctx, l.cfg.Resync); err != nil {
			return nil, err
		}
	}
}

// finished is the Job's terminal condition (Complete or Failed, status
// True), or nil. The controller sets it once no pod of the Job runs.
func finished(job *batchv1.Job) *batchv1.JobCondition {
	for i, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return &job.Status.Conditions[i]
		}
	}
	return nil
}

// podIndex is a pod's completion index, from its label or (older
// clusters) its annotation.
func podIndex(p *corev1.Pod) (int, bool) {
	s, ok := p.Labels[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		s, ok = p.Annotations[batchv1.JobCompletionIndexAnnotation]
	}
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(s)
	return i, err == nil && i >= 0
}

// attempts is how many workers a unit had: its pods, or the failure count
// the controller keeps on the newest one when older pods are gone.
func attempts(pods []corev1.Pod) int {
	n := len(pods)
	if p := newest(pods); p != nil {
		if c, err := strconv.Atoi(p.Annotations[batchv1.JobIndexFailureCountAnnotation]); err == nil && c+1 > n {
			n = c + 1
		}
	}
	return n
}

// newest is the pod created last (the unit's last attempt), or nil.
func newest(pods []corev1.Pod) *corev1.Pod {
	var best *corev1.Pod
	for i := range pods {
		p := &pods[i]
		if best == nil || best.CreationTimestamp.Before(&p.CreationTimestamp) ||
			best.CreationTimestamp.Equal(&p.CreationTimestamp) && p.Name > best.Name {
			best = p
		}
	}
	return best
}

// failedStatus is a failed unit's status from its last pod's worker
// container; why says what failed it when no pod tells.
func failedStatus(i int, pods []corev1.Pod, why string) fanout.UnitStatus {
	st := fanout.UnitStatus{Index: i, ExitCode: -1, Attempts: attempts(pods), Reason: why}
	p := newest(pods)
	if p == nil {
		st.Reason = why + "; no pod of the unit is left"
		return st
	}
	for _, cs := range p.Status.ContainerStatuses {
		t := cs.State.Terminated
		if t == nil || (cs.Name != WorkerContainer && len(p.Status.ContainerStatuses) > 1) {
			continue
		}
		st.ExitCode = int(t.ExitCode)
		st.Reason = fmt.Sprintf("pod %s: worker exited with %d (%s)%s", p.Name, t.ExitCode, exitMeaning(int(t.ExitCode), t.Reason), suffix(t.Message))
		return st
	}
	detail := string(p.Status.Phase)
	if p.Status.Reason != "" {
		detail += ", " + p.Status.Reason
	}
	st.Reason = fmt.Sprintf("%s; pod %s: no exit code (%s)%s", why, p.Name, detail, suffix(p.Status.Message))
	return st
}

// exitMeaning names compactord's worker exit codes.
func exitMeaning(code int, reason string) string {
	switch code {
	case fanout.ExitQuarantine:
		return "quarantine: a source object is bad"
	case fanout.ExitHalt:
		return "halt: the table must not be written"
	case fanout.ExitUsage:
		return "usage: the worker was started wrongly"
	}
	if reason != "" {
		return reason
	}
	return "failed"
}

// suffix is ": msg" for a non-empty message.
func suffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// anyRunning says whether a pod may still write: not Succeeded or Failed.
func anyRunning(pods map[int][]corev1.Pod) bool {
	for _, ps := range pods {
		for _, p := range ps {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				return true
			}
		}
	}
	return false
}

// fatal says an API error will not go away by asking again: the launcher
// lacks a permission, or the request is wrong.
func fatal(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsBadRequest(err) ||
		apierrors.IsInvalid(err) || apierrors.IsMethodNotSupported(err) || apierrors.IsNotAcceptable(err)
}
