package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	"k8s.io/client-go/kubernetes"

	"github.com/xdslab/xdslab/controlplane"
	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/controlplane/registry/kube"
	"github.com/xdslab/xdslab/internal/kubeclient"
)

// kubeFlags are the Kubernetes client flags of 'xdslab sim --sink kube' and 'xdslab
// controlplane --kubeconfig'.
type kubeFlags struct {
	kubeconfig string
	qps        float64
	burst      int
	// pods makes the kube sink write a Pod per endpoint.
	pods bool
}

func (k *kubeFlags) register(fl *pflag.FlagSet, qps float64, burst int) {
	fl.StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig file of the Kubernetes API server (default $KUBECONFIG, then ~/.kube/config)")
	fl.Float64Var(&k.qps, "kube-qps", qps, "client-side limit of Kubernetes API requests per second (negative: none)")
	fl.IntVar(&k.burst, "kube-burst", burst, "client-side burst of Kubernetes API requests (0: the qps, rounded up)")
}

// registerPods adds --kube-pods (the sink's commands only).
func (k *kubeFlags) registerPods(fl *pflag.FlagSet) {
	fl.BoolVar(&k.pods, "kube-pods", false, "with the kube sink: write a Pod per endpoint (labels, service account, locality) as a real cluster holds them")
}

// path resolves the kubeconfig the way kubectl does for a single file: the flag, $KUBECONFIG,
// ~/.kube/config.
func (k kubeFlags) path() string {
	if k.kubeconfig != "" {
		return k.kubeconfig
	}
	if env := os.Getenv("KUBECONFIG"); env != "" {
		return filepath.SplitList(env)[0]
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".kube", "config")
	}
	return ""
}

func (k kubeFlags) clients(agent string) (kubernetes.Interface, istioclient.Interface, error) {
	cfg, err := kubeclient.Config(kubeclient.Options{Kubeconfig: k.path(), QPS: k.qps, Burst: k.burst, UserAgent: agent})
	if err != nil {
		return nil, nil, err
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes client: %w", err)
	}
	ic, err := istioclient.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("istio client: %w", err)
	}
	return kc, ic, nil
}

// kubeSource adapts the kube registry to controlplane.Source (its Run takes any config store).
type kubeSource struct{ *kube.Controller }

var _ controlplane.Source = kubeSource{}

func (k kubeSource) Run(ctx context.Context, configs *config.Memory) error {
	return k.Controller.Run(ctx, configs)
}
