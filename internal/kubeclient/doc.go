// Package kubeclient builds the client-go REST configuration the lab's Kubernetes parts share
// (the simulator's kube sink and the control plane's kube registry): a kubeconfig file named
// explicitly, with client-side rate limits. It reads no environment: cmd/ resolves the default
// kubeconfig path ($KUBECONFIG, ~/.kube/config) and passes it down.
package kubeclient
