package main

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/fanout"
	"github.com/compactord/compactord/fanout/kubernetes"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/runner"
)

// kubeFlags say where --executor kubernetes creates its Indexed Jobs and
// what their workers run; what they leave empty comes from the environment
// (kubernetes.New: the pod's service account and namespace, its own image,
// COMPACTORD_JOB_TEMPLATE).
type kubeFlags struct {
	kubeconfig     string
	context        string
	namespace      string
	image          string
	template       string
	serviceAccount string
	envFrom        []string
}

func (k *kubeFlags) register(fs *commandFlags) {
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "with --executor kubernetes: the kubeconfig file (default: in a pod its service account, else KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&k.context, "kube-context", "", "with --executor kubernetes: the kubeconfig context (default: its current one)")
	fs.StringVar(&k.namespace, "kube-namespace", "", "with --executor kubernetes: the Jobs' namespace (default: POD_NAMESPACE, else the context's)")
	fs.StringVar(&k.image, "kube-image", "", "with --executor kubernetes: the workers' image, compactord's own (default: COMPACTORD_IMAGE, else the image of this pod's compactord container)")
	fs.StringVar(&k.template, "kube-job-template", "", "with --executor kubernetes: the Job template, e.g. deploy/kubernetes/job-template.yaml (default: COMPACTORD_JOB_TEMPLATE, else one bare worker container)")
	fs.StringVar(&k.serviceAccount, "kube-service-account", "", "with --executor kubernetes: the workers' service account (default: the template's)")
	fs.Func("kube-env-from-secret", "with --executor kubernetes: a Secret whose keys become the workers' environment, e.g. store credentials (repeatable)", func(s string) error {
		k.envFrom = append(k.envFrom, s)
		return nil
	})
}

// kubernetesExecutor is --executor kubernetes: the plan's units as one
// Indexed Job (fanout/kubernetes), this process the one committer.
func kubernetesExecutor(ctx context.Context, e *executorFlags, log hclog.Logger) (compaction.Executor, error) {
	k := e.kube
	l, err := kubernetes.New(ctx, kubernetes.Options{
		Kubeconfig: k.kubeconfig, Context: k.context, Namespace: k.namespace, Image: k.image,
		JobTemplate: k.template, ServiceAccount: k.serviceAccount, EnvFromSecrets: k.envFrom,
		WorkerArgs: e.store.workerArgs(), Log: log.Named("kubernetes"),
	}, os.Getenv)
	if err != nil {
		return nil, err
	}
	return e.fanout(l), nil
}

// daemonLaunchers are the daemon's launchers by executor kind (a policy's
// `executor { kind = ... }`): runner's defaults and kubernetes, their
// workers started with workerArgs after `run-unit --plan URL` (the
// daemon's --store-* flags). Process workers log to the logger of the
// table's run, as run-plan's do to its own (fanout.NewProcessLauncher). The
// Kubernetes launcher is built on first use from where the daemon runs
// (kubernetes.New with no flags: the pod's service account and namespace,
// its own image, COMPACTORD_JOB_TEMPLATE) and kept for the daemon's life;
// a failure fails that run and the next run tries again.
func daemonLaunchers(log hclog.Logger, workerArgs []string) map[string]runner.LauncherFunc {
	ls := runner.DefaultLaunchers(workerArgs...)
	var (
		mu sync.Mutex
		kl *kubernetes.Launcher
	)
	ls[policies.ExecutorKubernetes] = func(policies.Executor, hclog.Logger) (fanout.Launcher, error) {
		mu.Lock()
		defer mu.Unlock()
		if kl != nil {
			return kl, nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		l, err := kubernetes.New(ctx, kubernetes.Options{WorkerArgs: workerArgs, Log: log.Named("kubernetes")}, os.Getenv)
		if err != nil {
			return nil, err
		}
		kl = l
		return l, nil
	}
	return ls
}
