package sinks

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/simulator"
	"golang.org/x/sync/errgroup"
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
)

// Labels the kube sink puts on what it writes.
const (
	// KubeManagedByLabel marks every object the kube sink writes (value KubeFieldManager), so
	// that Clean finds them and a cluster's own objects are never touched.
	KubeManagedByLabel = "app.kubernetes.io/managed-by"
	// KubeFieldManager is the sink's server-side apply field manager (and managed-by value).
	KubeFieldManager = "xdslab-sim"
	// KubeStatusFieldManager is the field manager of the status the sink applies to its Pods.
	KubeStatusFieldManager = KubeFieldManager + "-status"
	// KubeSourceLabel on a Service and its EndpointSlices names the simulated ServiceEntry
	// they stand for.
	KubeSourceLabel = "xdslab.io/service-entry"
	// KubeIstioAPIVersion is the apiVersion the sink writes Istio objects with.
	KubeIstioAPIVersion = "networking.istio.io/v1"
	// KubeNodeName is the Node the sink's Pods are bound to (no kubelet runs it).
	KubeNodeName = "xdslab-sim"
	// KubeLocalityLabel is Istio's Pod label for the workload's locality (region.zone.subzone),
	// which overrides the node's topology labels.
	KubeLocalityLabel = "istio-locality"
	// KubeTLSModeLabel is the label Istio's sidecar injector puts on every injected Pod; istiod
	// marks a Pod's endpoints tlsMode=istio (auto-mTLS) only when it is there. The sink's Pods
	// stand for injected workloads, so they carry it (value istio) unless the endpoint's own
	// labels set it.
	KubeTLSModeLabel = "security.istio.io/tlsMode"
	// KubePodImage is the image of the sink's Pods' one container; it is never pulled, since
	// no kubelet runs their node.
	KubePodImage = "registry.k8s.io/pause:3.10"
	// maxSliceEndpoints is the EndpointSlice controller's default (and the API's maximum) of
	// endpoints per slice.
	maxSliceEndpoints = 1000
)

// KubeOptions configures a Kube sink.
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
	// Pods writes a Pod for every endpoint of a native Service (labels, service account,
	// locality as the istio-locality label, Ready status with the endpoint's IP) and points
	// the endpoint's EndpointSlice entry at it (targetRef), as a real cluster holds them: a
	// control plane that reads Pods (istiod) then sees endpoint labels and identities. The
	// Pods are bound to one Node object, KubeNodeName, that no kubelet runs: nothing is
	// started, and they tolerate every taint so that the node controller does not evict them.
	// It also writes the ServiceAccounts the Pods name (the API's admission requires them).
	Pods bool
}

// KubeStats count the sink's API calls.
type KubeStats struct {
	// Applies and Deletes count accepted server-side applies and deletes (a delete of an
	// object already gone counts too); Objects is their sum. A Pod counts two applies: the
	// object and its status.
	Applies, Deletes int64
	// Unchanged counts applies not sent because the object's body was the one the sink last
	// wrote (an endpoint change rewrites only the EndpointSlice, not its Service).
	Unchanged int64
}

// Objects is Applies + Deletes.
func (s KubeStats) Objects() int64 { return s.Applies + s.Deletes }

// Kube writes the simulated mesh to a Kubernetes API server with server-side apply (field
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
// carried by Pods in a real cluster, which the sink writes only with KubeOptions.Pods: without
// them a control plane reading the Services sees endpoints without labels (subset clusters are
// then empty). Use Pods or ServiceEntries to keep them.
//
// The sink remembers the body it last applied to every object and does not send an unchanged
// one again, so an event costs the writes a real cluster would see for it (an endpoint change
// is one EndpointSlice write). It assumes it is the only writer of its objects between Init
// and Close.
type Kube struct {
	opts KubeOptions
	// namespaces and service accounts ("ns/name") already applied; node once applied.
	namespaces map[string]bool
	accounts   map[string]bool
	node       bool
	// slices is the number of EndpointSlices written per native ServiceEntry key; a key in it
	// is written as a Service, any other key as an Istio object.
	slices map[istioconfig.Key]int
	// pods are the Pods written per native ServiceEntry key (with Pods), name -> service
	// account.
	pods map[istioconfig.Key]map[string]string
	// lastMu guards last: the checksum of the body last applied per object ("resource/ns/name"),
	// written by the workers once the API server accepted it.
	lastMu    sync.Mutex
	last      map[string][sha256.Size]byte
	applies   atomic.Int64
	deletes   atomic.Int64
	unchanged atomic.Int64
	closed    bool
}

var _ simulator.Sink = (*Kube)(nil)

// NewKube returns a sink writing through opts' clients.
func NewKube(opts KubeOptions) (*Kube, error) {
	if opts.Kube == nil || opts.Istio == nil {
		return nil, errors.New("kube sink: a Kubernetes and an Istio client are both required")
	}
	if opts.Workers < 0 {
		return nil, fmt.Errorf("kube sink: workers %d is negative: use 0 (default 4) or a positive count", opts.Workers)
	}
	if opts.Workers == 0 {
		opts.Workers = 4
	}
	return &Kube{opts: opts, namespaces: map[string]bool{}, accounts: map[string]bool{},
		slices: map[istioconfig.Key]int{}, pods: map[istioconfig.Key]map[string]string{},
		last: map[string][sha256.Size]byte{}}, nil
}

// Stats returns the calls made so far.
func (s *Kube) Stats() KubeStats {
	return KubeStats{Applies: s.applies.Load(), Deletes: s.deletes.Load(), Unchanged: s.unchanged.Load()}
}

// Init writes the initial topology (after cleaning up, with Clean).
func (s *Kube) Init(ctx context.Context, initial []istioconfig.Config) error {
	if s.closed {
		return errors.New("kube sink: closed")
	}
	if s.opts.Clean {
		nss := map[string]bool{}
		for _, c := range initial {
			nss[c.Namespace] = true
		}
		if err := s.CleanNamespaces(ctx, slices.Sorted(maps.Keys(nss))...); err != nil {
			return err
		}
	}
	if err := s.apply(ctx, initial, nil); err != nil {
		return fmt.Errorf("kube sink: initial topology: %w", err)
	}
	return nil
}

// Apply writes the event's upserts, then its deletes.
func (s *Kube) Apply(ctx context.Context, ev simulator.Event) error {
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
func (s *Kube) Close() error {
	s.closed = true
	return nil
}

// write is one API call (a Pod's is two: the object, then its status); plan builds them on
// the sink's goroutine and run issues them.
type write struct {
	what string
	do   func(ctx context.Context) error
	del  bool
	// calls is the number of API calls do makes (default 1).
	calls int64
	// id and sum, for an apply: the object and the checksum of its body, recorded once the
	// API server accepted it.
	id  string
	sum [sha256.Size]byte
}

// plan collects an event's writes in the order the API needs them: namespaces, service
// accounts and the node before the Pods that name them, Pods before the EndpointSlices that
// point at them, and Pod deletes after the slices stopped pointing at them.
type plan struct {
	// namespaces go first, in a step of their own: the writes of a step run concurrently, and
	// a service account sent alongside its namespace can reach the API server first ("namespaces
	// X not found").
	namespaces, setup, pods, main, cleanup []write
}

func (s *Kube) apply(ctx context.Context, upserts []istioconfig.Config, deletes []istioconfig.Key) error {
	var p plan
	for _, c := range upserts {
		if !s.namespaces[c.Namespace] {
			s.namespaces[c.Namespace] = true
			p.namespaces = append(p.namespaces, s.namespaceWrite(c.Namespace))
		}
	}
	for _, c := range upserts {
		if err := s.upsertWrites(&p, c); err != nil {
			return err
		}
	}
	for _, k := range deletes {
		s.deleteWrites(&p, k)
	}
	for _, ws := range [][]write{p.namespaces, p.setup, p.pods, p.main, p.cleanup} {
		if err := s.run(ctx, ws); err != nil {
			return err
		}
	}
	return nil
}

// applyWrite is a write of the object id with body; false when body is what the sink last
// applied to id (nothing to send).
func (s *Kube) applyWrite(id, what string, body any, do func(ctx context.Context) error) (write, bool) {
	j, err := json.Marshal(body)
	if err != nil {
		// Apply configurations and rendered JSON always marshal; never skip on a surprise.
		return write{what: what, do: do}, true
	}
	sum := sha256.Sum256(j)
	s.lastMu.Lock()
	same := s.last[id] == sum
	s.lastMu.Unlock()
	if same {
		s.unchanged.Add(1)
		return write{}, false
	}
	return write{what: what, do: do, id: id, sum: sum}, true
}

// appendTo appends applyWrite's write to ws when there is one: appendTo(&p.main)(s.applyWrite(...)).
func appendTo(ws *[]write) func(write, bool) {
	return func(w write, ok bool) {
		if ok {
			*ws = append(*ws, w)
		}
	}
}

// wrote reports whether the sink applied id and has not deleted it since.
func (s *Kube) wrote(id string) bool {
	s.lastMu.Lock()
	defer s.lastMu.Unlock()
	_, ok := s.last[id]
	return ok
}

// forget drops what the sink remembers of id (it is being deleted).
func (s *Kube) forget(id string) {
	s.lastMu.Lock()
	delete(s.last, id)
	s.lastMu.Unlock()
}

// run issues the writes with at most Workers in flight and returns the first error (the
// others are still waited for, so no call outlives Apply); after an error no new write starts.
func (s *Kube) run(ctx context.Context, ws []write) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.opts.Workers)
	for _, w := range ws {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if gctx.Err() != nil {
				return nil
			}
			err := w.do(gctx)
			if w.del && apierrors.IsNotFound(err) {
				err = nil
			}
			if err != nil {
				return fmt.Errorf("%s: %w", w.what, err)
			}
			n := max(w.calls, 1)
			if w.del {
				s.deletes.Add(n)
			} else {
				s.applies.Add(n)
			}
			if w.id != "" {
				s.lastMu.Lock()
				s.last[w.id] = w.sum
				s.lastMu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	// The caller's context ended before every write was issued.
	return ctx.Err()
}

func (s *Kube) applyOpts() metav1.ApplyOptions {
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

func (s *Kube) namespaceWrite(ns string) write {
	ac := corev1ac.Namespace(ns).WithLabels(map[string]string{KubeManagedByLabel: KubeFieldManager})
	return write{what: "namespace " + ns, do: func(ctx context.Context) error {
		_, err := s.opts.Kube.CoreV1().Namespaces().Apply(ctx, ac, s.applyOpts())
		return err
	}}
}

// upsertWrites plans the calls that make c current.
func (s *Kube) upsertWrites(p *plan, c istioconfig.Config) error {
	key := c.Key()
	if se, ok := c.Spec.(*networking.ServiceEntry); ok && !s.opts.ServiceEntries && nativeServiceEntry(c, se) {
		var pods map[string]kubePod
		if s.opts.Pods {
			pods = kubePods(c, se)
		}
		svc, eps := kubeService(c, se, pods != nil)
		appendTo(&p.main)(s.applyWrite("services/"+key.Namespace+"/"+c.Name, "service "+key.Namespace+"/"+c.Name, svc, func(ctx context.Context) error {
			_, err := s.opts.Kube.CoreV1().Services(c.Namespace).Apply(ctx, svc, s.applyOpts())
			return err
		}))
		for _, es := range eps {
			appendTo(&p.main)(s.applyWrite("endpointslices/"+c.Namespace+"/"+*es.Name, "endpointslice "+c.Namespace+"/"+*es.Name, es, func(ctx context.Context) error {
				_, err := s.opts.Kube.DiscoveryV1().EndpointSlices(c.Namespace).Apply(ctx, es, s.applyOpts())
				return err
			}))
		}
		prev, wasNative := s.slices[key]
		if !wasNative && s.wrote(istioID(key)) {
			// It was an Istio ServiceEntry before (never, for the simulator's services, but a
			// replayed trace can say anything).
			p.main = append(p.main, s.istioDelete(key))
		}
		for i := len(eps); i < prev; i++ {
			p.main = append(p.main, s.sliceDelete(c.Namespace, sliceName(c.Name, i)))
		}
		s.slices[key] = len(eps)
		s.podWrites(p, key, pods)
		return nil
	}
	if prev, wasNative := s.slices[key]; wasNative {
		s.nativeDeletes(p, key, prev)
		delete(s.slices, key)
	}
	body, err := istioconfig.RenderJSON(c, KubeIstioAPIVersion, managedLabels(c.Labels))
	if err != nil {
		return err
	}
	res, err := s.istioResource(key)
	if err != nil {
		return err
	}
	appendTo(&p.main)(s.applyWrite(istioID(key), strings.ToLower(string(key.Kind))+" "+key.Namespace+"/"+key.Name, json.RawMessage(body), func(ctx context.Context) error {
		return res.apply(ctx, key.Name, body, metav1.PatchOptions{FieldManager: KubeFieldManager, Force: new(true)})
	}))
	return nil
}

func istioID(k istioconfig.Key) string { return string(k.Kind) + "/" + k.Namespace + "/" + k.Name }

// podWrites plans the Pods of the native service key: applies (and their status) of the new
// and changed ones, deletes of the ones whose endpoint is gone. A Pod's service account cannot
// change, so a Pod whose endpoint changed account is deleted and created again.
func (s *Kube) podWrites(p *plan, key istioconfig.Key, pods map[string]kubePod) {
	prev := s.pods[key]
	cur := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(pods)) {
		pod := pods[name]
		sa := pod.sa
		cur[name] = sa
		if acct := key.Namespace + "/" + sa; !s.accounts[acct] {
			s.accounts[acct] = true
			p.setup = append(p.setup, s.accountWrite(key.Namespace, sa))
		}
		if !s.node {
			s.node = true
			p.setup = append(p.setup, s.nodeWrite())
		}
		id := "pods/" + key.Namespace + "/" + name
		oldSA, existed := prev[name]
		replace := existed && oldSA != sa
		if replace {
			s.forget(id)
		}
		status := kubePodStatus(key.Namespace, name, pod.ip)
		w, ok := s.applyWrite(id, "pod "+key.Namespace+"/"+name, []any{pod.apply, status}, func(ctx context.Context) error {
			pc := s.opts.Kube.CoreV1().Pods(key.Namespace)
			if replace {
				if err := pc.Delete(ctx, name, podDeleteOpts()); err != nil && !apierrors.IsNotFound(err) {
					return err
				}
			}
			if _, err := pc.Apply(ctx, pod.apply, s.applyOpts()); err != nil {
				return err
			}
			// Its own field manager: the status is a subresource, which the API server tracks
			// apart, and client-go's fake (which does not) keeps the spec as well.
			_, err := pc.ApplyStatus(ctx, status, metav1.ApplyOptions{FieldManager: KubeStatusFieldManager, Force: true})
			return err
		})
		w.calls = 2
		if replace {
			w.calls = 3 // counted as applies: the delete is part of replacing
		}
		appendTo(&p.pods)(w, ok)
	}
	for _, name := range slices.Sorted(maps.Keys(prev)) {
		if _, ok := cur[name]; !ok {
			p.cleanup = append(p.cleanup, s.podDelete(key.Namespace, name))
		}
	}
	if len(cur) == 0 {
		delete(s.pods, key)
	} else {
		s.pods[key] = cur
	}
}

// podDeleteOpts deletes a Pod at once: no kubelet runs the sink's node to finish a graceful
// termination.
func podDeleteOpts() metav1.DeleteOptions {
	return metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}
}

func (s *Kube) podDelete(ns, name string) write {
	s.forget("pods/" + ns + "/" + name)
	return write{what: "delete pod " + ns + "/" + name, del: true, do: func(ctx context.Context) error {
		return s.opts.Kube.CoreV1().Pods(ns).Delete(ctx, name, podDeleteOpts())
	}}
}

func (s *Kube) accountWrite(ns, name string) write {
	ac := corev1ac.ServiceAccount(name, ns).WithLabels(map[string]string{KubeManagedByLabel: KubeFieldManager}).
		WithAutomountServiceAccountToken(false)
	return write{what: "serviceaccount " + ns + "/" + name, do: func(ctx context.Context) error {
		_, err := s.opts.Kube.CoreV1().ServiceAccounts(ns).Apply(ctx, ac, s.applyOpts())
		return err
	}}
}

// nodeWrite applies the Node the Pods are bound to. Its NoSchedule taint keeps the scheduler
// from placing real Pods there.
func (s *Kube) nodeWrite() write {
	ac := corev1ac.Node(KubeNodeName).WithLabels(map[string]string{KubeManagedByLabel: KubeFieldManager}).
		WithSpec(corev1ac.NodeSpec().WithTaints(corev1ac.Taint().WithKey("xdslab.io/simulated").
			WithValue("true").WithEffect(corev1.TaintEffectNoSchedule)))
	return write{what: "node " + KubeNodeName, do: func(ctx context.Context) error {
		_, err := s.opts.Kube.CoreV1().Nodes().Apply(ctx, ac, s.applyOpts())
		return err
	}}
}

func (s *Kube) deleteWrites(p *plan, k istioconfig.Key) {
	if n, ok := s.slices[k]; ok {
		delete(s.slices, k)
		s.nativeDeletes(p, k, n)
		return
	}
	p.main = append(p.main, s.istioDelete(k))
}

func (s *Kube) nativeDeletes(p *plan, k istioconfig.Key, slices int) {
	s.forget("services/" + k.Namespace + "/" + k.Name)
	p.main = append(p.main, write{what: "delete service " + k.Namespace + "/" + k.Name, del: true, do: func(ctx context.Context) error {
		return s.opts.Kube.CoreV1().Services(k.Namespace).Delete(ctx, k.Name, metav1.DeleteOptions{})
	}})
	for i := range slices {
		p.main = append(p.main, s.sliceDelete(k.Namespace, sliceName(k.Name, i)))
	}
	s.podWrites(p, k, nil)
}

func (s *Kube) sliceDelete(ns, name string) write {
	s.forget("endpointslices/" + ns + "/" + name)
	return write{what: "delete endpointslice " + ns + "/" + name, del: true, do: func(ctx context.Context) error {
		return s.opts.Kube.DiscoveryV1().EndpointSlices(ns).Delete(ctx, name, metav1.DeleteOptions{})
	}}
}

func (s *Kube) istioDelete(k istioconfig.Key) write {
	s.forget(istioID(k))
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

func (s *Kube) istioResource(k istioconfig.Key) (istioResource, error) {
	n := s.opts.Istio.NetworkingV1()
	switch k.Kind {
	case istioconfig.KindServiceEntry:
		return resourceOf(n.ServiceEntries(k.Namespace)), nil
	case istioconfig.KindWorkloadEntry:
		return resourceOf(n.WorkloadEntries(k.Namespace)), nil
	case istioconfig.KindVirtualService:
		return resourceOf(n.VirtualServices(k.Namespace)), nil
	case istioconfig.KindDestinationRule:
		return resourceOf(n.DestinationRules(k.Namespace)), nil
	case istioconfig.KindSidecar:
		return resourceOf(n.Sidecars(k.Namespace)), nil
	case istioconfig.KindGateway:
		return resourceOf(n.Gateways(k.Namespace)), nil
	}
	return istioResource{}, fmt.Errorf("%s: the kube sink cannot write kind %s", k, k.Kind)
}

// CleanNamespaces deletes what the sink (this one or an earlier run) wrote in the namespaces
// (KubeOptions.Clean does it at Init). The sink then writes every object again.
func (s *Kube) CleanNamespaces(ctx context.Context, namespaces ...string) error {
	for _, ns := range namespaces {
		if err := s.clean(ctx, ns); err != nil {
			return fmt.Errorf("kube sink: clean namespace %s: %w", ns, err)
		}
	}
	s.lastMu.Lock()
	clear(s.last)
	s.lastMu.Unlock()
	clear(s.slices)
	clear(s.pods)
	clear(s.accounts)
	return nil
}

// clean deletes what an earlier run left in ns: every kind the sink writes, by label.
func (s *Kube) clean(ctx context.Context, ns string) error {
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
		s.opts.Kube.CoreV1().Pods(ns).DeleteCollection(ctx, podDeleteOpts(), sel),
		s.opts.Kube.CoreV1().ServiceAccounts(ns).DeleteCollection(ctx, del, sel),
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
func nativeServiceEntry(c istioconfig.Config, se *networking.ServiceEntry) bool {
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
// has no endpoints, so that a service scaled to zero keeps a slice to scale back into). With
// pods, every endpoint points at its Pod (kubePods) on KubeNodeName.
func kubeService(c istioconfig.Config, se *networking.ServiceEntry, pods bool) (*corev1ac.ServiceApplyConfiguration, []*discoveryv1ac.EndpointSliceApplyConfiguration) {
	labels := managedLabels(c.Labels)
	labels[KubeSourceLabel] = c.Name
	svc := corev1ac.Service(c.Name, c.Namespace).WithLabels(labels).
		WithSpec(corev1ac.ServiceSpec().WithType(corev1.ServiceTypeClusterIP))
	var sports []*discoveryv1ac.EndpointPortApplyConfiguration
	for _, p := range se.GetPorts() {
		target := cmp.Or(p.GetTargetPort(), p.GetNumber())
		sp := corev1ac.ServicePort().WithName(p.GetName()).WithPort(int32(p.GetNumber())).
			WithTargetPort(intstr.FromInt32(int32(target))).WithProtocol(corev1.ProtocolTCP)
		ep := discoveryv1ac.EndpointPort().WithName(p.GetName()).WithPort(int32(target)).WithProtocol(corev1.ProtocolTCP)
		if p.GetProtocol() != "" { // else none: Istio selects it from the name, or sniffs
			sp.WithAppProtocol(appProtocol(p.GetProtocol()))
			ep.WithAppProtocol(appProtocol(p.GetProtocol()))
		}
		svc.Spec.WithPorts(sp)
		sports = append(sports, ep)
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
			if pods {
				ep.WithNodeName(KubeNodeName).WithTargetRef(corev1ac.ObjectReference().
					WithKind("Pod").WithNamespace(c.Namespace).WithName(podName(c.Name, e.GetAddress())))
			}
			es.WithEndpoints(ep)
		}
		out = append(out, es)
	}
	return svc, out
}

// podName is the name of the Pod of service svc's endpoint addr: svc-ADDR, the address'
// dots and colons as dashes.
func podName(svc, addr string) string {
	return svc + "-" + strings.NewReplacer(".", "-", ":", "-").Replace(addr)
}

// kubePods renders the Pods of a native ServiceEntry's endpoints, by name: the endpoint's
// labels, its service account (default when it has none) and its locality as the
// istio-locality label, bound to KubeNodeName and tolerating every taint. Their status is
// kubePodStatus.
func kubePods(c istioconfig.Config, se *networking.ServiceEntry) map[string]kubePod {
	out := map[string]kubePod{}
	for _, e := range se.GetEndpoints() {
		name := podName(c.Name, e.GetAddress())
		labels := managedLabels(e.GetLabels())
		labels[KubeSourceLabel] = c.Name
		if _, ok := labels[KubeTLSModeLabel]; !ok {
			labels[KubeTLSModeLabel] = "istio"
		}
		if loc := e.GetLocality(); loc != "" {
			labels[KubeLocalityLabel] = strings.ReplaceAll(loc, "/", ".")
		}
		ctr := corev1ac.Container().WithName("app").WithImage(KubePodImage)
		for _, p := range se.GetPorts() {
			port := cmp.Or(e.GetPorts()[p.GetName()], p.GetTargetPort(), p.GetNumber())
			ctr.WithPorts(corev1ac.ContainerPort().WithContainerPort(int32(port)).WithProtocol(corev1.ProtocolTCP))
		}
		out[name] = kubePod{ip: e.GetAddress(), sa: cmp.Or(e.GetServiceAccount(), "default"),
			apply: corev1ac.Pod(name, c.Namespace).WithLabels(labels).WithSpec(corev1ac.PodSpec().
				WithNodeName(KubeNodeName).WithServiceAccountName(cmp.Or(e.GetServiceAccount(), "default")).
				WithAutomountServiceAccountToken(false).WithContainers(ctr).
				WithTolerations(corev1ac.Toleration().WithOperator(corev1.TolerationOpExists)))}
	}
	return out
}

// kubePod is one endpoint's Pod: the object, its IP and service account.
type kubePod struct {
	apply  *corev1ac.PodApplyConfiguration
	ip, sa string
}

// kubePodStatus is the status of a Pod that runs and is ready at ip.
func kubePodStatus(ns, name, ip string) *corev1ac.PodApplyConfiguration {
	st := corev1ac.PodStatus().WithPhase(corev1.PodRunning).WithPodIP(ip).WithPodIPs(corev1ac.PodIP().WithIP(ip))
	for _, t := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		st.WithConditions(corev1ac.PodCondition().WithType(t).WithStatus(corev1.ConditionTrue))
	}
	return corev1ac.Pod(name, ns).WithStatus(st)
}
