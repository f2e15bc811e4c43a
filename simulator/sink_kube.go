package simulator

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	networking "istio.io/api/networking/v1alpha3"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	discoveryv1ac "k8s.io/client-go/applyconfigurations/discovery/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/xdslab/xdslab/controlplane/model"
)

// Labels the kube sink puts on what it writes.
const (
	// KubeManagedByLabel marks every object the kube sink writes (value KubeFieldManager), so
	// that Clean finds them and a cluster's own objects are never touched.
	KubeManagedByLabel = "app.kubernetes.io/managed-by"
	// KubeFieldManager is the sink's server-side apply field manager (and managed-by value).
	KubeFieldManager = "xdslab-sim"
	// KubeSourceLabel on a Service and its EndpointSlices names the simulated ServiceEntry
	// they stand for.
	KubeSourceLabel = "xdslab.io/service-entry"
	// KubeIstioAPIVersion is the apiVersion the sink writes Istio objects with.
	KubeIstioAPIVersion = "networking.istio.io/v1"
	// maxSliceEndpoints is the EndpointSlice controller's default (and the API's maximum) of
	// endpoints per slice.
	maxSliceEndpoints = 1000
)

// KubeOptions configures a KubeSink.
type KubeOptions struct {
	// Kube writes Namespaces, Services and EndpointSlices; Istio writes Istio's config kinds.
	// Their rest.Config carries the client-side QPS/burst limits.
	Kube  kubernetes.Interface
	Istio istioclient.Interface
	// ServiceEntries writes every ServiceEntry as an Istio ServiceEntry. By default a
	// ServiceEntry that stands for a cluster-local service (one host NAME.NAMESPACE.svc.DOMAIN,
	// mesh-internal, static, inline endpoints) becomes a Kubernetes Service with EndpointSlices,
	// as a real cluster would hold it.
	ServiceEntries bool
	// Workers is the number of writes in flight at once within one Init or Apply (default 4);
	// the client's QPS limit bounds the rate across them.
	Workers int
	// Clean deletes, at Init, every object an earlier run of the sink left in the namespaces
	// the initial topology uses (found by KubeManagedByLabel).
	Clean bool
}

// KubeStats count the sink's API calls.
type KubeStats struct {
	// Applies and Deletes count accepted server-side applies and deletes (a delete of an
	// object already gone counts too); Objects is their sum.
	Applies, Deletes int64
}

// Objects is Applies + Deletes.
func (s KubeStats) Objects() int64 { return s.Applies + s.Deletes }

// KubeSink writes the simulated mesh to a Kubernetes API server with server-side apply (field
// manager KubeFieldManager, forced, so a rerun takes ownership back): Namespaces as the objects
// need them, each cluster-local ServiceEntry as a Service (without selector, so no controller
// rewrites its endpoints) plus EndpointSlices, and everything else (WorkloadEntries,
// VirtualServices, DestinationRules, Sidecars, Gateways, other ServiceEntries) as Istio objects
// of apiVersion networking.istio.io/v1. Apply returns once the API server has accepted every
// write of the event (each call returned 2xx), so t0, which the runner takes right after, is
// when the change became visible to watchers.
//
// A Service and its EndpointSlices carry what Kubernetes can say about an endpoint: address,
// target ports, zone and readiness. Endpoint labels (version), region and service accounts are
// carried by Pods in a real cluster, which the sink does not write: a control plane reading
// the Services sees endpoints without them (subset clusters are then empty). Use
// ServiceEntries to keep them.
type KubeSink struct {
	opts KubeOptions
	// namespaces already applied.
	namespaces map[string]bool
	// slices is the number of EndpointSlices written per native ServiceEntry key; a key in it
	// is written as a Service, any other key as an Istio object.
	slices  map[model.ConfigKey]int
	applies atomic.Int64
	deletes atomic.Int64
	closed  bool
}

var _ Sink = (*KubeSink)(nil)

// NewKubeSink returns a sink writing through opts' clients.
func NewKubeSink(opts KubeOptions) (*KubeSink, error) {
	if opts.Kube == nil || opts.Istio == nil {
		return nil, errors.New("kube sink: a Kubernetes and an Istio client are both required")
	}
	if opts.Workers < 0 {
		return nil, fmt.Errorf("kube sink: workers %d is negative: use 0 (default 4) or a positive count", opts.Workers)
	}
	if opts.Workers == 0 {
		opts.Workers = 4
	}
	return &KubeSink{opts: opts, namespaces: map[string]bool{}, slices: map[model.ConfigKey]int{}}, nil
}

// Stats returns the calls made so far.
func (s *KubeSink) Stats() KubeStats {
	return KubeStats{Applies: s.applies.Load(), Deletes: s.deletes.Load()}
}

// Init writes the initial topology (after cleaning up, with Clean).
func (s *KubeSink) Init(ctx context.Context, initial []model.Config) error {
	if s.closed {
		return errors.New("kube sink: closed")
	}
	if s.opts.Clean {
		nss := map[string]bool{}
		for _, c := range initial {
			nss[c.Namespace] = true
		}
		for _, ns := range slices.Sorted(maps.Keys(nss)) {
			if err := s.clean(ctx, ns); err != nil {
				return fmt.Errorf("kube sink: clean namespace %s: %w", ns, err)
			}
		}
	}
	if err := s.apply(ctx, initial, nil); err != nil {
		return fmt.Errorf("kube sink: initial topology: %w", err)
	}
	return nil
}

// Apply writes the event's upserts, then its deletes.
func (s *KubeSink) Apply(ctx context.Context, ev Event) error {
	if s.closed {
		return errors.New("kube sink: closed")
	}
	if err := s.apply(ctx, ev.Upserts, ev.Deletes); err != nil {
		return fmt.Errorf("kube sink: event %d (%s): %w", ev.ID, ev.Kind, err)
	}
	return nil
}

// Close marks the sink closed. What it wrote stays in the cluster (the control plane under test
// may still read it); Clean at the next Init removes it.
func (s *KubeSink) Close() error {
	s.closed = true
	return nil
}

// write is one API call; plan builds them on the sink's goroutine and run issues them.
type write struct {
	what string
	do   func(ctx context.Context) error
	del  bool
}

func (s *KubeSink) apply(ctx context.Context, upserts []model.Config, deletes []model.ConfigKey) error {
	// Namespaces first: every other object needs its namespace.
	var nsWrites []write
	for _, c := range upserts {
		if !s.namespaces[c.Namespace] {
			s.namespaces[c.Namespace] = true
			nsWrites = append(nsWrites, s.namespaceWrite(c.Namespace))
		}
	}
	if err := s.run(ctx, nsWrites); err != nil {
		return err
	}
	var ws []write
	for _, c := range upserts {
		cw, err := s.upsertWrites(c)
		if err != nil {
			return err
		}
		ws = append(ws, cw...)
	}
	for _, k := range deletes {
		ws = append(ws, s.deleteWrites(k)...)
	}
	return s.run(ctx, ws)
}

// run issues the writes with at most Workers in flight and returns the first error (the
// others are still waited for, so no call outlives Apply).
func (s *KubeSink) run(ctx context.Context, ws []write) error {
	if len(ws) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  atomic.Int64
	)
	for range min(s.opts.Workers, len(ws)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(ws) || ctx.Err() != nil {
					return
				}
				w := ws[i]
				err := w.do(ctx)
				if w.del && apierrors.IsNotFound(err) {
					err = nil
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("%s: %w", w.what, err)
					}
					mu.Unlock()
					cancel()
					return
				}
				if w.del {
					s.deletes.Add(1)
				} else {
					s.applies.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		// The caller's context ended before every write was issued.
		first = ctx.Err()
	}
	return first
}

func (s *KubeSink) applyOpts() metav1.ApplyOptions {
	return metav1.ApplyOptions{FieldManager: KubeFieldManager, Force: true}
}

func managedLabels(in map[string]string) map[string]string {
	out := maps.Clone(in)
	if out == nil {
		out = map[string]string{}
	}
	out[KubeManagedByLabel] = KubeFieldManager
	return out
}

func (s *KubeSink) namespaceWrite(ns string) write {
	ac := corev1ac.Namespace(ns).WithLabels(map[string]string{KubeManagedByLabel: KubeFieldManager})
	return write{what: "namespace " + ns, do: func(ctx context.Context) error {
		_, err := s.opts.Kube.CoreV1().Namespaces().Apply(ctx, ac, s.applyOpts())
		return err
	}}
}

// upsertWrites returns the calls that make c current.
func (s *KubeSink) upsertWrites(c model.Config) ([]write, error) {
	key := c.Key()
	var ws []write
	if se, ok := c.Spec.(*networking.ServiceEntry); ok && !s.opts.ServiceEntries && nativeServiceEntry(c, se) {
		svc, eps := kubeService(c, se)
		ws = append(ws, write{what: "service " + key.Namespace + "/" + c.Name, do: func(ctx context.Context) error {
			_, err := s.opts.Kube.CoreV1().Services(c.Namespace).Apply(ctx, svc, s.applyOpts())
			return err
		}})
		for _, es := range eps {
			ws = append(ws, write{what: "endpointslice " + c.Namespace + "/" + *es.Name, do: func(ctx context.Context) error {
				_, err := s.opts.Kube.DiscoveryV1().EndpointSlices(c.Namespace).Apply(ctx, es, s.applyOpts())
				return err
			}})
		}
		prev, wasNative := s.slices[key]
		if !wasNative {
			// It may have been an Istio ServiceEntry before (it is not, for the simulator's
			// services, but a replayed trace can say anything).
			ws = append(ws, s.istioDelete(key))
		}
		for i := len(eps); i < prev; i++ {
			ws = append(ws, s.sliceDelete(c.Namespace, sliceName(c.Name, i)))
		}
		s.slices[key] = len(eps)
		return ws, nil
	}
	if prev, wasNative := s.slices[key]; wasNative {
		ws = append(ws, s.nativeDeletes(key, prev)...)
		delete(s.slices, key)
	}
	body, err := renderJSON(c, KubeIstioAPIVersion, managedLabels(c.Labels))
	if err != nil {
		return nil, err
	}
	res, err := s.istioResource(key)
	if err != nil {
		return nil, err
	}
	ws = append(ws, write{what: strings.ToLower(string(key.Kind)) + " " + key.Namespace + "/" + key.Name, do: func(ctx context.Context) error {
		return res.apply(ctx, key.Name, body, metav1.PatchOptions{FieldManager: KubeFieldManager, Force: new(true)})
	}})
	return ws, nil
}

func (s *KubeSink) deleteWrites(k model.ConfigKey) []write {
	if n, ok := s.slices[k]; ok {
		delete(s.slices, k)
		return s.nativeDeletes(k, n)
	}
	return []write{s.istioDelete(k)}
}

func (s *KubeSink) nativeDeletes(k model.ConfigKey, slices int) []write {
	ws := []write{{what: "delete service " + k.Namespace + "/" + k.Name, del: true, do: func(ctx context.Context) error {
		return s.opts.Kube.CoreV1().Services(k.Namespace).Delete(ctx, k.Name, metav1.DeleteOptions{})
	}}}
	for i := range slices {
		ws = append(ws, s.sliceDelete(k.Namespace, sliceName(k.Name, i)))
	}
	return ws
}

func (s *KubeSink) sliceDelete(ns, name string) write {
	return write{what: "delete endpointslice " + ns + "/" + name, del: true, do: func(ctx context.Context) error {
		return s.opts.Kube.DiscoveryV1().EndpointSlices(ns).Delete(ctx, name, metav1.DeleteOptions{})
	}}
}

func (s *KubeSink) istioDelete(k model.ConfigKey) write {
	return write{what: "delete " + strings.ToLower(string(k.Kind)) + " " + k.Namespace + "/" + k.Name, del: true, do: func(ctx context.Context) error {
		res, err := s.istioResource(k)
		if err != nil {
			return err
		}
		return res.delete(ctx, k.Name)
	}}
}

// istioResource is one Istio kind's typed client in one namespace, reduced to what the sink
// calls.
type istioResource struct {
	patch func(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions) error
	del   func(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

func (r istioResource) apply(ctx context.Context, name string, body []byte, opts metav1.PatchOptions) error {
	return r.patch(ctx, name, types.ApplyPatchType, body, opts)
}

func (r istioResource) delete(ctx context.Context, name string) error {
	return r.del(ctx, name, metav1.DeleteOptions{})
}

// typedClient is the part of every generated Istio client the sink uses.
type typedClient[T any] interface {
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

func resourceOf[T any](c typedClient[T]) istioResource {
	return istioResource{
		patch: func(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions) error {
			_, err := c.Patch(ctx, name, pt, data, opts)
			return err
		},
		del: c.Delete,
	}
}

func (s *KubeSink) istioResource(k model.ConfigKey) (istioResource, error) {
	n := s.opts.Istio.NetworkingV1()
	switch k.Kind {
	case model.KindServiceEntry:
		return resourceOf(n.ServiceEntries(k.Namespace)), nil
	case model.KindWorkloadEntry:
		return resourceOf(n.WorkloadEntries(k.Namespace)), nil
	case model.KindVirtualService:
		return resourceOf(n.VirtualServices(k.Namespace)), nil
	case model.KindDestinationRule:
		return resourceOf(n.DestinationRules(k.Namespace)), nil
	case model.KindSidecar:
		return resourceOf(n.Sidecars(k.Namespace)), nil
	case model.KindGateway:
		return resourceOf(n.Gateways(k.Namespace)), nil
	}
	return istioResource{}, fmt.Errorf("%s: the kube sink cannot write kind %s", k, k.Kind)
}

// clean deletes what an earlier run left in ns: every kind the sink writes, by label.
func (s *KubeSink) clean(ctx context.Context, ns string) error {
	sel := metav1.ListOptions{LabelSelector: KubeManagedByLabel + "=" + KubeFieldManager}
	del := metav1.DeleteOptions{}
	n := s.opts.Istio.NetworkingV1()
	// Services have no DeleteCollection (the API refuses it): list and delete one by one.
	svcs, err := s.opts.Kube.CoreV1().Services(ns).List(ctx, sel)
	if err != nil {
		return err
	}
	var errs []error
	for _, svc := range svcs.Items {
		if err := s.opts.Kube.CoreV1().Services(ns).Delete(ctx, svc.Name, del); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	errs = append(errs,
		s.opts.Kube.DiscoveryV1().EndpointSlices(ns).DeleteCollection(ctx, del, sel),
		n.ServiceEntries(ns).DeleteCollection(ctx, del, sel),
		n.WorkloadEntries(ns).DeleteCollection(ctx, del, sel),
		n.VirtualServices(ns).DeleteCollection(ctx, del, sel),
		n.DestinationRules(ns).DeleteCollection(ctx, del, sel),
		n.Sidecars(ns).DeleteCollection(ctx, del, sel),
		n.Gateways(ns).DeleteCollection(ctx, del, sel),
	)
	return errors.Join(errs...)
}

// nativeServiceEntry reports whether c stands for a cluster-local Kubernetes service: one host
// c.Name.c.Namespace.svc.DOMAIN, mesh-internal, static resolution, inline endpoints only.
func nativeServiceEntry(c model.Config, se *networking.ServiceEntry) bool {
	hosts := se.GetHosts()
	if len(hosts) != 1 || se.GetWorkloadSelector() != nil || len(se.GetAddresses()) > 0 ||
		se.GetLocation() != networking.ServiceEntry_MESH_INTERNAL || se.GetResolution() != networking.ServiceEntry_STATIC {
		return false
	}
	prefix := c.Name + "." + c.Namespace + ".svc."
	if !strings.HasPrefix(hosts[0], prefix) || len(hosts[0]) == len(prefix) {
		return false
	}
	for _, p := range se.GetPorts() {
		if p.GetName() == "" {
			return false // a Service with several ports needs every port named
		}
	}
	return len(se.GetPorts()) > 0
}

func sliceName(svc string, i int) string { return fmt.Sprintf("%s-xdslab-%d", svc, i) }

// appProtocol is the Service port appProtocol Istio reads for an Istio protocol name.
func appProtocol(istio string) string { return strings.ToLower(istio) }

// kubeService renders a native ServiceEntry as a Service and its EndpointSlices (at most
// maxSliceEndpoints endpoints each; the sink writes at least one slice, empty when the service
// has no endpoints, so that a service scaled to zero keeps a slice to scale back into).
func kubeService(c model.Config, se *networking.ServiceEntry) (*corev1ac.ServiceApplyConfiguration, []*discoveryv1ac.EndpointSliceApplyConfiguration) {
	labels := managedLabels(c.Labels)
	labels[KubeSourceLabel] = c.Name
	svc := corev1ac.Service(c.Name, c.Namespace).WithLabels(labels).
		WithSpec(corev1ac.ServiceSpec().WithType(corev1.ServiceTypeClusterIP))
	var sports []*discoveryv1ac.EndpointPortApplyConfiguration
	for _, p := range se.GetPorts() {
		target := cmp.Or(p.GetTargetPort(), p.GetNumber())
		svc.Spec.WithPorts(corev1ac.ServicePort().WithName(p.GetName()).WithPort(int32(p.GetNumber())).
			WithTargetPort(intstr.FromInt32(int32(target))).WithProtocol(corev1.ProtocolTCP).
			WithAppProtocol(appProtocol(p.GetProtocol())))
		sports = append(sports, discoveryv1ac.EndpointPort().WithName(p.GetName()).WithPort(int32(target)).
			WithProtocol(corev1.ProtocolTCP).WithAppProtocol(appProtocol(p.GetProtocol())))
	}
	eps := se.GetEndpoints()
	var out []*discoveryv1ac.EndpointSliceApplyConfiguration
	for i := 0; i == 0 || i*maxSliceEndpoints < len(eps); i++ {
		sl := maps.Clone(labels)
		sl[discoveryv1.LabelServiceName] = c.Name
		sl[discoveryv1.LabelManagedBy] = KubeFieldManager
		es := discoveryv1ac.EndpointSlice(sliceName(c.Name, i), c.Namespace).WithLabels(sl).
			WithAddressType(discoveryv1.AddressTypeIPv4).WithPorts(sports...)
		for _, e := range eps[i*maxSliceEndpoints : min(len(eps), (i+1)*maxSliceEndpoints)] {
			ep := discoveryv1ac.Endpoint().WithAddresses(e.GetAddress()).
				WithConditions(discoveryv1ac.EndpointConditions().WithReady(true).WithServing(true).WithTerminating(false))
			if _, zone, ok := strings.Cut(e.GetLocality(), "/"); ok {
				zone, _, _ = strings.Cut(zone, "/")
				ep.WithZone(zone)
			}
			es.WithEndpoints(ep)
		}
		out = append(out, es)
	}
	return svc, out
}

// renderJSON renders c as a Kubernetes object: apiVersion, kind, metadata {name, namespace,
// labels}, spec (protojson field names).
func renderJSON(c model.Config, apiVersion string, labels map[string]string) ([]byte, error) {
	spec, err := MarshalSpec(c.Spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Key(), err)
	}
	type meta struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels,omitempty"`
	}
	j, err := json.Marshal(struct {
		APIVersion string          `json:"apiVersion"`
		Kind       string          `json:"kind"`
		Metadata   meta            `json:"metadata"`
		Spec       json.RawMessage `json:"spec"`
	}{apiVersion, string(c.Kind), meta{c.Name, c.Namespace, labels}, spec})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Key(), err)
	}
	return j, nil
}
