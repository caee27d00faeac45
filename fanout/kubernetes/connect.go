package kubernetes

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchv1client "k8s.io/client-go/kubernetes/typed/batch/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Environment variables the launcher reads where it runs.
const (
	// EnvImage, when set, is the workers' image.
	EnvImage = "COMPACTORD_IMAGE"
	// EnvJobTemplate, when set, is the path of the Job template
	// (deploy/kubernetes/deployment.yaml mounts job-template.yaml's
	// ConfigMap there).
	EnvJobTemplate = "COMPACTORD_JOB_TEMPLATE"
	// EnvPodName and EnvPodNamespace are the daemon's own pod, from the
	// downward API (deploy/kubernetes/deployment.yaml sets both).
	EnvPodName      = "POD_NAME"
	EnvPodNamespace = "POD_NAMESPACE"
)

// DaemonContainer is the name of the daemon's container in its pod, whose
// image the workers run (deploy/kubernetes/deployment.yaml).
const DaemonContainer = "compactord"

// serviceAccountNamespace is where a pod's mounted token says its namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Connect returns a client of the cluster and the namespace to use. With
// kubeconfig empty inside a pod (KUBERNETES_SERVICE_HOST set, KUBECONFIG
// not), it uses the pod's in-cluster config and namespace (POD_NAMESPACE,
// else the service account's); otherwise the kubeconfig file (kubeconfig,
// else KUBECONFIG, else ~/.kube/config), its context kubecontext (empty:
// the current one) and that context's namespace ("default" when it names
// none).
func Connect(kubeconfig, kubecontext string) (Client, string, error) {
	var (
		rc  *rest.Config
		ns  string
		err error
	)
	if kubeconfig == "" && os.Getenv("KUBECONFIG") == "" && os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		if rc, err = rest.InClusterConfig(); err != nil {
			return nil, "", fmt.Errorf("kubernetes in-cluster config: %w", err)
		}
		if ns = os.Getenv(EnvPodNamespace); ns == "" {
			b, err := os.ReadFile(serviceAccountNamespace)
			if err != nil {
				return nil, "", fmt.Errorf("kubernetes namespace: set %s or mount the service account: %w", EnvPodNamespace, err)
			}
			ns = strings.TrimSpace(string(b))
		}
	} else {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = kubeconfig
		cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubecontext})
		if rc, err = cc.ClientConfig(); err != nil {
			return nil, "", fmt.Errorf("kubeconfig: %w", err)
		}
		if ns, _, err = cc.Namespace(); err != nil {
			return nil, "", fmt.Errorf("kubeconfig namespace: %w", err)
		}
	}
	rc.UserAgent = "compactord"
	batch, err := batchv1client.NewForConfig(rc)
	if err != nil {
		return nil, "", fmt.Errorf("kubernetes client: %w", err)
	}
	core, err := corev1client.NewForConfig(rc)
	if err != nil {
		return nil, "", fmt.Errorf("kubernetes client: %w", err)
	}
	return clients{batch: batch, core: core}, ns, nil
}

// clients is a Client of the two API groups' REST clients.
type clients struct {
	batch batchv1client.BatchV1Interface
	core  corev1client.CoreV1Interface
}

// BatchV1 is the batch/v1 client (Jobs).
func (c clients) BatchV1() batchv1client.BatchV1Interface { return c.batch }

// CoreV1 is the core/v1 client (pods).
func (c clients) CoreV1() corev1client.CoreV1Interface { return c.core }

// Options are the launcher's settings from a command line
// (cmd/compactord's --kube-* flags); New takes what they leave empty from
// the environment.
type Options struct {
	// Kubeconfig and Context choose the cluster (Connect).
	Kubeconfig, Context string
	// Namespace of the Jobs (default: POD_NAMESPACE, else the kubeconfig
	// context's).
	Namespace string
	// Image of the workers (default: Discover's).
	Image string
	// JobTemplate is the template file (default: COMPACTORD_JOB_TEMPLATE,
	// else DefaultTemplate).
	JobTemplate string
	// ServiceAccount and EnvFromSecrets are Config's.
	ServiceAccount string
	EnvFromSecrets []string
	// WorkerArgs are Config's.
	WorkerArgs []string
	// Log receives the launcher's progress.
	Log hclog.Logger
}

// New connects to the cluster and returns the launcher of o, its gaps
// filled from the environment (getenv; os.Getenv but in tests) as Connect,
// Discover and Options say.
func New(ctx context.Context, o Options, getenv func(string) string) (*Launcher, error) {
	client, ns, err := Connect(o.Kubeconfig, o.Context)
	if err != nil {
		return nil, err
	}
	cfg := Config{Client: client, Namespace: o.Namespace, Image: o.Image, ServiceAccount: o.ServiceAccount,
		EnvFromSecrets: o.EnvFromSecrets, WorkerArgs: o.WorkerArgs, Log: o.Log}
	if path := cmp.Or(o.JobTemplate, getenv(EnvJobTemplate)); path != "" {
		if cfg.Template, err = LoadTemplate(path); err != nil {
			return nil, err
		}
	}
	if err := Discover(ctx, &cfg, getenv); err != nil {
		return nil, err
	}
	cfg.Namespace = cmp.Or(cfg.Namespace, ns)
	return NewLauncher(cfg)
}

// Discover fills what cfg leaves empty from where the daemon runs (getenv
// is os.Getenv but in tests):
//   - Namespace: POD_NAMESPACE.
//   - Image: COMPACTORD_IMAGE, else the image of the daemon's own container
//     (named DaemonContainer, else the pod's first), read from its pod
//     POD_NAME in POD_NAMESPACE: the workers run the daemon's binary.
//   - Owner: that pod, when the Jobs go to its namespace, so that a Job
//     does not outlive the coordinator that would commit its units.
//
// Outside a pod (no POD_NAME) it sets only what the variables give.
func Discover(ctx context.Context, cfg *Config, getenv func(string) string) error {
	podName, podNS := getenv(EnvPodName), getenv(EnvPodNamespace)
	if cfg.Namespace == "" {
		cfg.Namespace = podNS
	}
	if cfg.Image == "" {
		cfg.Image = getenv(EnvImage)
	}
	if podName == "" || podNS == "" || (cfg.Image != "" && (cfg.Owner != nil || cfg.Namespace != podNS)) {
		return nil
	}
	if cfg.Client == nil {
		return fmt.Errorf("discover pod %s/%s: no client", podNS, podName)
	}
	pod, err := cfg.Client.CoreV1().Pods(podNS).Get(ctx, podName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("discover the daemon's own pod %s/%s (%s, %s): %w", podNS, podName, EnvPodNamespace, EnvPodName, err)
	}
	if cfg.Image == "" {
		cfg.Image = imageOf(pod)
	}
	if cfg.Owner == nil && cfg.Namespace == podNS {
		cfg.Owner = &metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}
	}
	return nil
}

// imageOf is the image of a pod's daemon container.
func imageOf(pod *corev1.Pod) string {
	for _, c := range pod.Spec.Containers {
		if c.Name == DaemonContainer {
			return c.Image
		}
	}
	if len(pod.Spec.Containers) > 0 {
		return pod.Spec.Containers[0].Image
	}
	return ""
}
