package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/compactord/compactord/fanout"
	"github.com/compactord/compactord/internal/testutil"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

const testNS = "compactord"

var (
	jobsGVR = batchv1.SchemeGroupVersion.WithResource("jobs")
	podsGVR = corev1.SchemeGroupVersion.WithResource("pods")
)

// testSpec is a launch of units units of plan "p1".
func testSpec(units int) fanout.LaunchSpec {
	return fanout.LaunchSpec{
		PlanID:               "p1",
		PlanURL:              "s3://lake/events/_compactord/plans/p1/plan.json",
		Table:                "s3://lake/events",
		Units:                units,
		Parallelism:          2,
		BackoffLimitPerIndex: 2,
	}
}

// newTestLauncher is a launcher on a fake clientset that reads the Job
// again every 10ms. The test changes the cluster through client.Tracker(),
// so that client.Actions() holds only the launcher's calls.
func newTestLauncher(t *testing.T, client *fake.Clientset, mod func(*Config)) *Launcher {
	t.Helper()
	cfg := Config{Client: client, Namespace: testNS, Image: "registry.example.com/compactord:v1", Resync: 10 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	l, err := NewLauncher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// launch runs Launch in the background; it checks that no unit is reported
// twice.
type launch struct {
	t    *testing.T
	mu   sync.Mutex
	got  []fanout.UnitStatus
	done chan error
}

func startLaunch(ctx context.Context, t *testing.T, l *Launcher, spec fanout.LaunchSpec) *launch {
	t.Helper()
	r := &launch{t: t, done: make(chan error, 1)}
	seen := map[int]bool{}
	go func() {
		r.done <- l.Launch(ctx, spec, func(st fanout.UnitStatus) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if seen[st.Index] {
				t.Errorf("unit %d reported twice: %+v", st.Index, st)
			}
			seen[st.Index] = true
			r.got = append(r.got, st)
		})
	}()
	return r
}

// reported waits until n units are reported and returns them by index.
func (r *launch) reported(n int) []fanout.UnitStatus {
	r.t.Helper()
	eventually(r.t, fmt.Sprintf("%d units reported", n), func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.got) >= n
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.got)
	slices.SortFunc(out, func(a, b fanout.UnitStatus) int { return a.Index - b.Index })
	return out
}

// wait is Launch's error.
func (r *launch) wait() error {
	r.t.Helper()
	select {
	case err := <-r.done:
		return err
	case <-time.After(20 * time.Second):
		r.t.Fatal("Launch did not return")
		return nil
	}
}

// running fails the test when Launch has returned.
func (r *launch) running() {
	r.t.Helper()
	select {
	case err := <-r.done:
		r.t.Fatalf("Launch returned early: %v", err)
	default:
	}
}

// endsInError checks a call's error: with want "", none (the test stops on
// one); else one containing want, when it says true: the case ends there.
func endsInError(t *testing.T, call string, err error, want string) bool {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("%s: %v", call, err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("%s = %v, want an error containing %q", call, err, want)
	}
	return want != ""
}

// eventually fails the test when cond does not hold within 20 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, 20*time.Second, 2*time.Millisecond, what, cond)
}

// createdJob waits for the launcher to create its Job and returns it as
// the launcher sent it.
func createdJob(t *testing.T, client *fake.Clientset) *batchv1.Job {
	t.Helper()
	var job *batchv1.Job
	eventually(t, "the Job to be created", func() bool {
		for _, a := range client.Actions() {
			if c, ok := a.(k8stesting.CreateAction); ok && a.GetResource() == jobsGVR {
				job = c.GetObject().(*batchv1.Job)
				return true
			}
		}
		return false
	})
	return job
}

// setJobStatus changes the stored Job's status as the Job controller would.
func setJobStatus(t *testing.T, client *fake.Clientset, name string, f func(*batchv1.JobStatus)) {
	t.Helper()
	obj, err := client.Tracker().Get(jobsGVR, testNS, name)
	if err != nil {
		t.Fatal(err)
	}
	job := obj.(*batchv1.Job).DeepCopy()
	f(&job.Status)
	if err := client.Tracker().Update(jobsGVR, job, testNS); err != nil {
		t.Fatal(err)
	}
}

// testPod is one attempt of a unit.
type testPod struct {
	index, attempt int
	phase          corev1.PodPhase
	exitCode       *int32 // nil: not terminated
	message        string
}

// putPod stores (or updates) the pod of an attempt, as the Job controller
// and kubelet would leave it.
func putPod(t *testing.T, client *fake.Clientset, job string, p testPod) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:              fmt.Sprintf("%s-%d-a%d", job, p.index, p.attempt),
			Namespace:         testNS,
			CreationTimestamp: metav1.NewTime(time.Unix(1000+int64(p.attempt), 0)),
			Labels: map[string]string{
				batchv1.JobNameLabel:                 job,
				batchv1.JobCompletionIndexAnnotation: strconv.Itoa(p.index),
			},
			Annotations: map[string]string{batchv1.JobIndexFailureCountAnnotation: strconv.Itoa(p.attempt)},
		},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: WorkerContainer}}},
		Status: corev1.PodStatus{Phase: p.phase},
	}
	if p.exitCode != nil {
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name:  WorkerContainer,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: *p.exitCode, Reason: "Error", Message: p.message}},
		}}
	}
	if _, err := client.Tracker().Get(podsGVR, testNS, pod.Name); err == nil {
		err = client.Tracker().Update(podsGVR, pod, testNS)
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := client.Tracker().Add(pod); err != nil {
		t.Fatal(err)
	}
}

// exited is a pointer to an exit code.
func exited(code int32) *int32 { return &code }

// condition is a terminal Job condition.
func condition(typ batchv1.JobConditionType, reason string) batchv1.JobCondition {
	return batchv1.JobCondition{Type: typ, Status: corev1.ConditionTrue, Reason: reason, Message: "message of " + reason}
}

// wantUnit is what a test expects of one reported unit.
type wantUnit struct {
	index     int
	succeeded bool
	exitCode  int
	attempts  int
	reason    string // a part of Reason
}

func checkUnits(t *testing.T, got []fanout.UnitStatus, want []wantUnit) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("reported %d units %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Index != w.index || g.Succeeded != w.succeeded || g.ExitCode != w.exitCode || g.Attempts != w.attempts || !strings.Contains(g.Reason, w.reason) {
			t.Errorf("unit %d = %+v, want %+v", w.index, g, w)
		}
	}
}

// jobGone says the Job is no longer stored.
func jobGone(client *fake.Clientset, name string) bool {
	_, err := client.Tracker().Get(jobsGVR, testNS, name)
	return apierrors.IsNotFound(err)
}

// A step changes the cluster, then waits for the units reported so far.
type step struct {
	pods      []testPod
	status    func(*batchv1.JobStatus)
	deleteJob bool
	want      []wantUnit // every unit reported after this step, by index
}

func TestLaunchReportsEachUnitOnceAsTheJobStatusShowsIt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		units   int
		maxFail *int32
		steps   []step
		wantErr error
	}{{
		name:  "every unit completes, one after a retry",
		units: 3,
		steps: []step{{
			pods:   []testPod{{index: 0, phase: corev1.PodSucceeded, exitCode: exited(0)}},
			status: func(s *batchv1.JobStatus) { s.CompletedIndexes = "0" },
			want:   []wantUnit{{index: 0, succeeded: true, attempts: 1}},
		}, {
			// Nothing new: the same index set again, and a running pod.
			pods:   []testPod{{index: 1, phase: corev1.PodFailed, exitCode: exited(fanout.ExitRetry)}, {index: 1, attempt: 1, phase: corev1.PodRunning}},
			status: func(s *batchv1.JobStatus) { s.Active = 1; s.Failed = 1 },
			want:   []wantUnit{{index: 0, succeeded: true, attempts: 1}},
		}, {
			pods: []testPod{{index: 1, attempt: 1, phase: corev1.PodSucceeded, exitCode: exited(0)}, {index: 2, phase: corev1.PodSucceeded, exitCode: exited(0)}},
			status: func(s *batchv1.JobStatus) {
				s.CompletedIndexes = "0-2"
				s.Conditions = []batchv1.JobCondition{condition(batchv1.JobComplete, "CompletionsReached")}
			},
			want: []wantUnit{{index: 0, succeeded: true, attempts: 1}, {index: 1, succeeded: true, attempts: 2}, {index: 2, succeeded: true, attempts: 1}},
		}},
	}, {
		name:  "failed indexes carry their pods' exit codes",
		units: 5,
		steps: []step{{
			pods: []testPod{
				{index: 1, phase: corev1.PodFailed, exitCode: exited(fanout.ExitQuarantine), message: "part-1.parquet: bad footer"},
				{index: 2, phase: corev1.PodFailed, exitCode: exited(fanout.ExitHalt)},
			},
			status: func(s *batchv1.JobStatus) { s.FailedIndexes = ptr.To("1-2") },
			want: []wantUnit{
				{index: 1, exitCode: fanout.ExitQuarantine, attempts: 1, reason: "quarantine: a source object is bad): part-1.parquet: bad footer"},
				{index: 2, exitCode: fanout.ExitHalt, attempts: 1, reason: "halt"},
			},
		}, {
			pods: []testPod{
				{index: 0, phase: corev1.PodSucceeded, exitCode: exited(0)},
				{index: 3, phase: corev1.PodFailed, exitCode: exited(fanout.ExitRetry)},
				{index: 3, attempt: 1, phase: corev1.PodFailed, exitCode: exited(fanout.ExitRetry)},
				{index: 3, attempt: 2, phase: corev1.PodFailed, exitCode: exited(137), message: "OOMKilled"},
				{index: 4, phase: corev1.PodSucceeded, exitCode: exited(0)},
			},
			status: func(s *batchv1.JobStatus) {
				s.CompletedIndexes = "0,4"
				s.FailedIndexes = ptr.To("1-3")
				s.Conditions = []batchv1.JobCondition{condition(batchv1.JobFailed, "FailedIndexes")}
			},
			want: []wantUnit{
				{index: 0, succeeded: true, attempts: 1},
				{index: 1, exitCode: fanout.ExitQuarantine, attempts: 1, reason: "quarantine"},
				{index: 2, exitCode: fanout.ExitHalt, attempts: 1, reason: "halt"},
				{index: 3, exitCode: 137, attempts: 3, reason: "exited with 137 (Error): OOMKilled"},
				{index: 4, succeeded: true, attempts: 1},
			},
		}},
	}, {
		name:    "a Job failed as a whole fails the units not yet final",
		units:   4,
		maxFail: ptr.To[int32](1),
		steps: []step{{
			pods: []testPod{
				{index: 0, phase: corev1.PodFailed, exitCode: exited(fanout.ExitQuarantine)},
				{index: 1, phase: corev1.PodFailed}, // terminated before its container started
			},
			status: func(s *batchv1.JobStatus) {
				s.FailedIndexes = ptr.To("0")
				s.Conditions = []batchv1.JobCondition{condition(batchv1.JobFailed, "MaxFailedIndexesExceeded")}
			},
			want: []wantUnit{
				{index: 0, exitCode: fanout.ExitQuarantine, attempts: 1, reason: "quarantine"},
				{index: 1, exitCode: -1, attempts: 1, reason: "the Job is Failed (MaxFailedIndexesExceeded: message of MaxFailedIndexesExceeded); pod compactord-p1-1-a0: no exit code (Failed)"},
				{index: 2, exitCode: -1, reason: "MaxFailedIndexesExceeded: message of MaxFailedIndexesExceeded); no pod of the unit is left"},
				{index: 3, exitCode: -1, reason: "no pod of the unit is left"},
			},
		}},
	}, {
		name:  "a Job deleted by someone else fails the rest once its pods stopped",
		units: 3,
		steps: []step{{
			pods:   []testPod{{index: 0, phase: corev1.PodSucceeded, exitCode: exited(0)}, {index: 1, phase: corev1.PodRunning}},
			status: func(s *batchv1.JobStatus) { s.CompletedIndexes = "0" },
			want:   []wantUnit{{index: 0, succeeded: true, attempts: 1}},
		}, {
			// Deleted while unit 1's worker still runs: nothing more is
			// reported until it stopped.
			deleteJob: true,
			want:      []wantUnit{{index: 0, succeeded: true, attempts: 1}},
		}, {
			pods: []testPod{{index: 1, phase: corev1.PodFailed, exitCode: exited(143)}},
			want: []wantUnit{
				{index: 0, succeeded: true, attempts: 1},
				{index: 1, exitCode: 143, attempts: 1, reason: "exited with 143"},
				{index: 2, exitCode: -1, reason: "the Job was deleted; no pod of the unit is left"},
			},
		}},
		wantErr: ErrJobGone,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			l := newTestLauncher(t, client, func(c *Config) { c.MaxFailedIndexes = tc.maxFail })
			r := startLaunch(t.Context(), t, l, testSpec(tc.units))
			job := createdJob(t, client)
			if !ptr.Equal(job.Spec.MaxFailedIndexes, tc.maxFail) {
				t.Errorf("maxFailedIndexes = %v, want %v", job.Spec.MaxFailedIndexes, tc.maxFail)
			}
			for i, s := range tc.steps {
				for _, p := range s.pods {
					putPod(t, client, job.Name, p)
				}
				if s.status != nil {
					setJobStatus(t, client, job.Name, s.status)
				}
				if s.deleteJob {
					if err := client.Tracker().Delete(jobsGVR, testNS, job.Name); err != nil {
						t.Fatal(err)
					}
				}
				got := r.reported(len(s.want))
				if i < len(tc.steps)-1 {
					// Let the launcher read the Job again a few times:
					// nothing more may be reported.
					n := readsOfJob(client)
					eventually(t, "the Job to be read again", func() bool { r.running(); return readsOfJob(client) >= n+3 })
					got = r.reported(len(s.want))
				}
				checkUnits(t, got, s.want)
			}
			if err := r.wait(); !errors.Is(err, tc.wantErr) {
				t.Fatalf("Launch = %v, want %v", err, tc.wantErr)
			}
			if !jobGone(client, job.Name) {
				t.Error("the Job is still there after Launch returned")
			}
			checkDeletedInBackground(t, client, job.Name, tc.wantErr == nil)
		})
	}
}

// readsOfJob counts the launcher's gets and lists of pods: one per reading
// of the Job that found something to report or a Job gone.
func readsOfJob(client *fake.Clientset) int {
	n := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == "get" && a.GetResource() == jobsGVR || a.GetVerb() == "list" && a.GetResource() == podsGVR {
			n++
		}
	}
	return n
}

// checkDeletedInBackground checks that the launcher deleted the Job with
// propagation Background when want (and did not when the Job was gone
// already and the delete found nothing, which is fine either way).
func checkDeletedInBackground(t *testing.T, client *fake.Clientset, name string, want bool) {
	t.Helper()
	found := false
	for _, a := range client.Actions() {
		d, ok := a.(k8stesting.DeleteAction)
		if !ok || a.GetResource() != jobsGVR || d.GetName() != name {
			continue
		}
		found = true
		if p := d.GetDeleteOptions().PropagationPolicy; p == nil || *p != metav1.DeletePropagationBackground {
			t.Errorf("Job deleted with propagation %v, want Background", p)
		}
	}
	if want && !found {
		t.Error("the launcher did not delete the Job")
	}
}

func TestCancelingALaunchDeletesTheJobAndWaitsForItsWorkers(t *testing.T) {
	client := fake.NewClientset()
	l := newTestLauncher(t, client, nil)
	ctx, cancel := context.WithCancel(t.Context())
	r := startLaunch(ctx, t, l, testSpec(3))
	job := createdJob(t, client)
	putPod(t, client, job.Name, testPod{index: 0, phase: corev1.PodSucceeded, exitCode: exited(0)})
	putPod(t, client, job.Name, testPod{index: 1, phase: corev1.PodRunning})
	setJobStatus(t, client, job.Name, func(s *batchv1.JobStatus) { s.CompletedIndexes = "0"; s.Active = 1 })
	checkUnits(t, r.reported(1), []wantUnit{{index: 0, succeeded: true, attempts: 1}})
	cancel()
	// The Job is deleted at once, but Launch returns only when unit 1's
	// worker has stopped: whoever cleans up after it races no worker.
	eventually(t, "the Job deleted", func() bool { return jobGone(client, job.Name) })
	n := readsOfJob(client)
	eventually(t, "the pods listed again", func() bool { r.running(); return readsOfJob(client) >= n+3 })
	putPod(t, client, job.Name, testPod{index: 1, phase: corev1.PodFailed, exitCode: exited(143)})
	if err := r.wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Launch = %v, want context.Canceled", err)
	}
	checkDeletedInBackground(t, client, job.Name, true)
	checkUnits(t, r.reported(1), []wantUnit{{index: 0, succeeded: true, attempts: 1}})
}

func TestLaunchRefusesAJobOfThePlanThatExistsAlready(t *testing.T) {
	client := fake.NewClientset(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: JobName("p1"), Namespace: testNS}})
	l := newTestLauncher(t, client, nil)
	err := l.Launch(t.Context(), testSpec(2), func(fanout.UnitStatus) { t.Error("reported a unit") })
	if !apierrors.IsAlreadyExists(err) || !strings.Contains(err.Error(), "exists already") {
		t.Fatalf("Launch = %v, want AlreadyExists", err)
	}
	if jobGone(client, JobName("p1")) {
		t.Fatal("the launcher deleted a Job it did not create")
	}
}

func TestLaunchFailsOnAnErrorAskingAgainCannotMend(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(podsGVR.GroupResource(), "", errors.New("no RBAC"))
	})
	l := newTestLauncher(t, client, nil)
	r := startLaunch(t.Context(), t, l, testSpec(2))
	job := createdJob(t, client)
	setJobStatus(t, client, job.Name, func(s *batchv1.JobStatus) { s.CompletedIndexes = "0" })
	if err := r.wait(); !apierrors.IsForbidden(err) {
		t.Fatalf("Launch = %v, want Forbidden", err)
	}
	if !jobGone(client, job.Name) {
		t.Fatal("the Job is still there after the launch failed")
	}
}
