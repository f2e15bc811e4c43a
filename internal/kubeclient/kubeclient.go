package kubeclient

import (
	"errors"
	"fmt"
	"math"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Options configure Config.
type Options struct {
	// Kubeconfig is the kubeconfig file (required); its current context is used.
	Kubeconfig string
	// QPS and Burst bound the client's request rate (client-go's token bucket). QPS 0 means
	// client-go's default (5); a negative QPS disables the limiter.
	QPS   float64
	Burst int
	// UserAgent names the client in the API server's logs and audit records.
	UserAgent string
}

// Validate reports every problem with the options, each saying how to fix it.
func (o Options) Validate() error {
	var errs []error
	if o.Kubeconfig == "" {
		errs = append(errs, errors.New("no kubeconfig given: pass --kubeconfig FILE (or set KUBECONFIG)"))
	}
	if o.QPS > math.MaxFloat32 || math.IsNaN(o.QPS) {
		errs = append(errs, fmt.Errorf("qps %v is out of range: use a rate such as 50", o.QPS))
	}
	if o.Burst < 0 {
		errs = append(errs, fmt.Errorf("burst %d is negative: use 0 (the qps, rounded up) or a positive count", o.Burst))
	}
	return errors.Join(errs...)
}

// Config loads the kubeconfig and applies the rate limits. Burst 0 means max(1, ceil(QPS)), so a
// limiter never starts with an empty bucket smaller than one second of traffic.
func Config(o Options) (*rest.Config, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w: pass a readable kubeconfig file", o.Kubeconfig, err)
	}
	cfg.UserAgent = o.UserAgent
	switch {
	case o.QPS < 0:
		cfg.QPS = -1
	case o.QPS > 0:
		cfg.QPS = float32(o.QPS)
		cfg.Burst = o.Burst
		if cfg.Burst == 0 {
			cfg.Burst = max(1, int(math.Ceil(o.QPS)))
		}
	default:
		if o.Burst > 0 {
			cfg.Burst = o.Burst
		}
	}
	return cfg, nil
}
