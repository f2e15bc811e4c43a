package kube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	istionet "istio.io/client-go/pkg/apis/networking/v1"
	istiosec "istio.io/client-go/pkg/apis/security/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	istioinformers "istio.io/client-go/pkg/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/controlplane/registry"
	"github.com/xdslab/xdslab/istioconfig"
)

// DefaultDomainSuffix is the cluster's DNS domain unless told otherwise.
const DefaultDomainSuffix = "cluster.local"

// KindEndpointSlice keys the EndpointSlice an endpoint came from (model.Endpoint.Source).
const KindEndpointSlice istioconfig.Kind = "EndpointSlice"

// ConfigStore is where the Istio objects go: the control plane's config store
// (controlplane/config.Memory) applies a batch of upserts and deletes atomically.
type ConfigStore interface {
	Apply(upserts []*istioconfig.Config, deletes []istioconfig.Key) error
}

// Options configure a Controller.
type Options struct {
	// Kube reads Services and EndpointSlices; Istio reads Istio's config kinds. Either may be
	// nil to read only the other.
	Kube  kubernetes.Interface
	Istio istioclient.Interface
	// Pods also watches Pods, as istiod does: an EndpointSlice endpoint that points at a Pod
	// (targetRef) takes the Pod's labels, service account and istio-locality label (else
	// the slice's zone). Without it endpoints have no labels, and subsets select nothing.
	Pods bool
	// Namespace limits the watch to one namespace; empty watches all.
	Namespace string
	// DomainSuffix of service hostnames (default cluster.local).
	DomainSuffix string
	// Resync replays the informers' caches this often (client-go's resync); zero disables it.
	// Unchanged objects cause no update.
	Resync time.Duration
	// Logger receives rejected objects and sync progress; nil discards.
	Logger *slog.Logger
}

// Controller watches a cluster. It is a registry.Registry (Services and EndpointSlices) and
// writes Istio objects to a ConfigStore. Create it with New, Subscribe, then Run.
type Controller struct {
	opts Options
	log  *slog.Logger

	qmu    sync.Mutex
	queue  []event
	signal chan struct{}
	synced chan struct{}

	// mu guards notify and the state below, which only Run's goroutine writes: Subscribe
	// reads a consistent copy.
	mu        sync.Mutex
	notify    func(registry.Update)
	services  map[nsName]*model.Service
	endpoints map[string][]*model.Endpoint // by host, as last notified
	slicesOf  map[nsName]map[string]*discoveryv1.EndpointSlice
	// pods by namespace/name (with Options.Pods), and the services whose slices point at
	// each pod, to recompute when it changes.
	pods     map[nsName]*corev1.Pod
	podUsers map[nsName]map[nsName]bool
}

type nsName struct{ ns, name string }

// event is one informer callback: obj is the new object, or nil for a delete of old.
type event struct {
	obj, old any
	// sync marks the end of the initial lists: Run closes Synced when it gets here.
	sync bool
}

var _ registry.Registry = (*Controller)(nil)

// New returns a controller; nothing is watched until Run.
func New(opts Options) (*Controller, error) {
	if opts.Kube == nil && opts.Istio == nil {
		return nil, errors.New("kube registry: no client given: pass a Kubernetes client, an Istio client or both")
	}
	if opts.Resync < 0 {
		return nil, fmt.Errorf("kube registry: resync %v is negative: use 0 (none) or a positive duration", opts.Resync)
	}
	opts.DomainSuffix = cmp.Or(opts.DomainSuffix, DefaultDomainSuffix)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Controller{
		opts: opts, log: opts.Logger, signal: make(chan struct{}, 1), synced: make(chan struct{}),
		services: map[nsName]*model.Service{}, endpoints: map[string][]*model.Endpoint{},
		slicesOf: map[nsName]map[string]*discoveryv1.EndpointSlice{},
		pods:     map[nsName]*corev1.Pod{}, podUsers: map[nsName]map[nsName]bool{},
	}, nil
}

// Name implements registry.Registry.
func (c *Controller) Name() string { return "kubernetes" }

// Subscribe implements registry.Registry: fn gets the current services and endpoints at once,
// then every change. A second subscriber replaces the first.
func (c *Controller) Subscribe(fn func(registry.Update)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notify = fn
	if fn == nil || len(c.services) == 0 {
		return
	}
	u := registry.Update{Services: map[string]*model.Service{}, Endpoints: maps.Clone(c.endpoints)}
	for _, svc := range c.services {
		u.Services[svc.Hostname] = svc
	}
	fn(u)
}

// Synced is closed once the initial content of every watched kind has been delivered (the
// registry notified and the config store written).
func (c *Controller) Synced() <-chan struct{} { return c.synced }

// Run starts the informers and applies what they report until ctx ends. Istio objects go to
// configs (which may be nil when no Istio client was given). It returns nil when ctx ends,
// after the informers have stopped.
func (c *Controller) Run(ctx context.Context, configs ConfigStore) error {
	if c.opts.Istio != nil && configs == nil {
		return errors.New("kube registry: Istio objects are watched but no config store was given")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		syncs     []cache.InformerSynced
		factories []interface {
			Start(stop <-chan struct{})
			Shutdown()
		}
	)
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueue(event{obj: obj}) },
		UpdateFunc: func(old, obj any) { c.enqueue(event{obj: obj, old: old}) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			c.enqueue(event{old: obj})
		},
	}
	watch := func(infs ...cache.SharedIndexInformer) error {
		for _, inf := range infs {
			reg, err := inf.AddEventHandler(handler)
			if err != nil {
				return fmt.Errorf("kube registry: %w", err)
			}
			syncs = append(syncs, reg.HasSynced)
		}
		return nil
	}
	if c.opts.Kube != nil {
		f := informers.NewSharedInformerFactoryWithOptions(c.opts.Kube, c.opts.Resync, informers.WithNamespace(c.opts.Namespace))
		infs := []cache.SharedIndexInformer{f.Core().V1().Services().Informer(), f.Discovery().V1().EndpointSlices().Informer()}
		if c.opts.Pods {
			infs = append(infs, f.Core().V1().Pods().Informer())
		}
		if err := watch(infs...); err != nil {
			return err
		}
		factories = append(factories, f)
	}
	if c.opts.Istio != nil {
		f := istioinformers.NewSharedInformerFactoryWithOptions(c.opts.Istio, c.opts.Resync, istioinformers.WithNamespace(c.opts.Namespace))
		n := f.Networking().V1()
		if err := watch(n.ServiceEntries().Informer(), n.WorkloadEntries().Informer(), n.VirtualServices().Informer(),
			n.DestinationRules().Informer(), n.Sidecars().Informer(), n.Gateways().Informer(),
			f.Security().V1().PeerAuthentications().Informer(), f.Security().V1().AuthorizationPolicies().Informer(),
			f.Security().V1().RequestAuthentications().Informer()); err != nil {
			return err
		}
		factories = append(factories, f)
	}
	for _, f := range factories {
		f.Start(ctx.Done())
	}
	// The informers retry failed lists and watches forever (a missing CRD, an API server that
	// is not up yet), as istiod's do; Synced stays open until every initial list arrived.
	syncDone := make(chan struct{})
	go func() {
		defer close(syncDone)
		if cache.WaitForCacheSync(ctx.Done(), syncs...) {
			c.enqueue(event{sync: true})
		}
	}()
	defer func() {
		cancel()
		<-syncDone
		for _, f := range factories {
			f.Shutdown() // waits for the informers' goroutines
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.signal:
		}
		for _, ev := range c.take() {
			if ev.sync {
				c.log.Info("kube registry synced", "services", c.serviceCount())
				close(c.synced)
				continue
			}
			c.handle(ev, configs)
		}
	}
}

func (c *Controller) enqueue(ev event) {
	c.qmu.Lock()
	c.queue = append(c.queue, ev)
	c.qmu.Unlock()
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

func (c *Controller) take() []event {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	q := c.queue
	c.queue = nil
	return q
}

func (c *Controller) serviceCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.services)
}

func (c *Controller) handle(ev event, configs ConfigStore) {
	switch o := cmp.Or[any](ev.obj, ev.old).(type) {
	case *corev1.Service:
		c.serviceChanged(o, ev.obj == nil)
	case *discoveryv1.EndpointSlice:
		c.sliceChanged(o, ev.obj == nil)
	case *corev1.Pod:
		c.podChanged(o, ev.obj == nil)
	default:
		cfg, err := istioConfig(o)
		if err != nil {
			c.log.Warn("kube registry: object ignored", "err", err)
			return
		}
		if ev.obj == nil {
			err = configs.Apply(nil, []istioconfig.Key{cfg.Key()})
		} else {
			err = configs.Apply([]*istioconfig.Config{cfg}, nil)
		}
		if err != nil {
			// The store keeps the object's last good version, as for a bad file.
			c.log.Warn("kube registry: Istio object rejected; keeping its previous version", "config", cfg.Key().String(), "err", err)
		}
	}
}

// Hostname is the cluster-local host of a Service.
func (c *Controller) Hostname(namespace, name string) string {
	return name + "." + namespace + ".svc." + c.opts.DomainSuffix
}

func (c *Controller) serviceChanged(s *corev1.Service, deleted bool) {
	k := nsName{s.Namespace, s.Name}
	host := c.Hostname(s.Namespace, s.Name)
	var svc *model.Service
	if !deleted {
		svc = ConvertService(s, host)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	prev := c.services[k]
	if svc.Equal(prev) {
		return
	}
	u := registry.Update{Services: map[string]*model.Service{host: svc}}
	if svc == nil {
		delete(c.services, k)
		// The slices stay: a Service re-created with the same name finds them.
		if _, ok := c.endpoints[host]; ok {
			delete(c.endpoints, host)
			u.Endpoints = map[string][]*model.Endpoint{host: nil}
		}
	} else {
		c.services[k] = svc
		if prev == nil {
			// Slices may have arrived before their Service.
			if eps := c.convertEndpoints(k, host); len(eps) > 0 {
				c.endpoints[host] = eps
				u.Endpoints = map[string][]*model.Endpoint{host: eps}
			}
		}
	}
	c.send(u)
}

func (c *Controller) sliceChanged(es *discoveryv1.EndpointSlice, deleted bool) {
	svcName := es.Labels[discoveryv1.LabelServiceName]
	if svcName == "" {
		return // not a Service's slice
	}
	k := nsName{es.Namespace, svcName}
	c.mu.Lock()
	defer c.mu.Unlock()
	if deleted {
		delete(c.slicesOf[k], es.Name)
		if len(c.slicesOf[k]) == 0 {
			delete(c.slicesOf, k)
		}
	} else {
		if c.slicesOf[k] == nil {
			c.slicesOf[k] = map[string]*discoveryv1.EndpointSlice{}
		}
		c.slicesOf[k][es.Name] = es
	}
	if c.services[k] == nil {
		return // endpoints without a Service are not part of the mesh
	}
	c.refreshEndpoints(k)
}

// podChanged records a Pod and refreshes the endpoints of the services whose slices point at
// it: a label or service-account change is an endpoint-only change.
func (c *Controller) podChanged(p *corev1.Pod, deleted bool) {
	k := nsName{p.Namespace, p.Name}
	c.mu.Lock()
	defer c.mu.Unlock()
	users := c.podUsers[k]
	if deleted {
		delete(c.pods, k)
		// Refreshing registers again the services whose slices still point at it.
		delete(c.podUsers, k)
	} else {
		c.pods[k] = p
	}
	for _, svc := range slices.SortedFunc(maps.Keys(users), func(a, b nsName) int {
		return cmp.Or(strings.Compare(a.ns, b.ns), strings.Compare(a.name, b.name))
	}) {
		if c.services[svc] != nil {
			c.refreshEndpoints(svc)
		}
	}
}

// refreshEndpoints converts the slices of service k and notifies if its endpoints changed;
// c.mu is held.
func (c *Controller) refreshEndpoints(k nsName) {
	host := c.Hostname(k.ns, k.name)
	eps := c.convertEndpoints(k, host)
	if slices.EqualFunc(eps, c.endpoints[host], (*model.Endpoint).Equal) {
		return
	}
	if len(eps) == 0 {
		delete(c.endpoints, host)
	} else {
		c.endpoints[host] = eps
	}
	c.send(registry.Update{Endpoints: map[string][]*model.Endpoint{host: eps}})
}

// send notifies the subscriber; c.mu is held, so Subscribe cannot interleave.
func (c *Controller) send(u registry.Update) {
	if c.notify != nil {
		c.notify(u)
	}
}

func (c *Controller) convertEndpoints(k nsName, host string) []*model.Endpoint {
	names := slices.Sorted(maps.Keys(c.slicesOf[k]))
	var out []*model.Endpoint
	seen := map[string]bool{}
	for _, n := range names {
		es := c.slicesOf[k][n]
		var pod func(ref *corev1.ObjectReference) *corev1.Pod
		if c.opts.Pods {
			pod = func(ref *corev1.ObjectReference) *corev1.Pod {
				pk := nsName{cmp.Or(ref.Namespace, es.Namespace), ref.Name}
				if c.podUsers[pk] == nil {
					c.podUsers[pk] = map[nsName]bool{}
				}
				c.podUsers[pk][k] = true
				return c.pods[pk]
			}
		}
		for _, ep := range convertEndpointSlice(es, host, pod) {
			// An address in two slices (a slice handover) is one endpoint: the first slice's.
			if !seen[ep.Address] {
				seen[ep.Address] = true
				out = append(out, ep)
			}
		}
	}
	slices.SortFunc(out, model.CompareEndpoints)
	return out
}

// AnnotationExportTo is Istio's annotation that sets a Kubernetes Service's exportTo.
const AnnotationExportTo = "networking.istio.io/exportTo"

// ConvertService turns a Service into the mesh's view of it (nil for an ExternalName Service,
// which has no endpoints of its own). Its ClusterIPs are its addresses (none for a headless
// Service, which resolves as passthrough, as Istio treats it); a port's protocol is its
// appProtocol, else the prefix of its name before '-' (Istio's naming convention). Istio's
// annotation networking.istio.io/exportTo (a comma-separated list) is its exportTo.
func ConvertService(s *corev1.Service, host string) *model.Service {
	if s.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	svc := &model.Service{Hostname: host, Namespace: s.Namespace, Labels: s.Labels,
		Source: istioconfig.Key{Kind: model.KindService, Name: s.Name, Namespace: s.Namespace}}
	if v, ok := s.Annotations[AnnotationExportTo]; ok {
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				svc.ExportTo = append(svc.ExportTo, e)
			}
		}
	}
	ips := s.Spec.ClusterIPs
	if len(ips) == 0 {
		ips = []string{s.Spec.ClusterIP}
	}
	for _, ip := range ips {
		if ip != "" && ip != corev1.ClusterIPNone {
			svc.Addresses = append(svc.Addresses, ip)
		}
	}
	if s.Spec.ClusterIP == corev1.ClusterIPNone {
		svc.Resolution = model.ResolutionPassthrough
	}
	for _, p := range s.Spec.Ports {
		svc.Ports = append(svc.Ports, model.Port{Name: p.Name, Number: uint32(p.Port), Protocol: portProtocol(p.Name, p.AppProtocol, p.Protocol)})
	}
	return svc
}

func portProtocol(name string, appProtocol *string, l4 corev1.Protocol) model.Protocol {
	switch l4 {
	case corev1.ProtocolUDP:
		return model.ProtocolUDP // istiod generates nothing for it
	case corev1.ProtocolSCTP:
		return model.ProtocolUnknown
	}
	if appProtocol != nil {
		if p := model.ParseProtocol(*appProtocol); p != model.ProtocolUnknown {
			return p
		}
	}
	prefix, _, _ := strings.Cut(name, "-")
	return model.ParseProtocol(prefix)
}

// convertEndpointSlice returns the ready endpoints of a slice (Kubernetes' ready condition:
// unset means ready), one per endpoint (its first address), with the slice's ports by name and
// its zone. Labels and service accounts live on Pods: pod (nil: none read) returns the Pod of a
// targetRef, or nil when it is not known (yet).
func convertEndpointSlice(es *discoveryv1.EndpointSlice, host string, pod func(*corev1.ObjectReference) *corev1.Pod) []*model.Endpoint {
	ports := map[string]uint32{}
	for _, p := range es.Ports {
		if p.Port != nil {
			ports[ptrOr(p.Name, "")] = uint32(*p.Port)
		}
	}
	src := istioconfig.Key{Kind: KindEndpointSlice, Name: es.Name, Namespace: es.Namespace}
	var out []*model.Endpoint
	for _, e := range es.Endpoints {
		if len(e.Addresses) == 0 || !ptrOr(e.Conditions.Ready, true) {
			continue
		}
		ep := &model.Endpoint{Service: host, Address: e.Addresses[0], Ports: ports,
			Locality: model.Locality{Zone: ptrOr(e.Zone, "")}, Source: src}
		if pod != nil && e.TargetRef != nil && e.TargetRef.Kind == "Pod" {
			if p := pod(e.TargetRef); p != nil {
				applyPod(ep, p)
			}
		}
		out = append(out, ep)
	}
	return out
}

// LocalityLabel is Istio's Pod label for a workload's locality, region.zone.subzone.
const LocalityLabel = "istio-locality"

// applyPod gives an endpoint what its Pod says: labels, service account, and the
// istio-locality label's locality when it has one.
func applyPod(ep *model.Endpoint, p *corev1.Pod) {
	ep.Labels = maps.Clone(p.Labels)
	ep.ServiceAccount = p.Spec.ServiceAccountName
	if loc, ok := p.Labels[LocalityLabel]; ok && loc != "" {
		parts := strings.SplitN(loc, ".", 3)
		parts = append(parts, "", "")
		ep.Locality = model.Locality{Region: parts[0], Zone: parts[1], SubZone: parts[2]}
	}
}

func ptrOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// istioConfig converts an Istio object from the informers into a config object. The spec is
// cloned: the informer's cache owns the object.
func istioConfig(obj any) (*istioconfig.Config, error) {
	var (
		kind istioconfig.Kind
		meta metav1.ObjectMeta
		spec proto.Message
	)
	switch o := obj.(type) {
	case *istionet.ServiceEntry:
		kind, meta, spec = istioconfig.KindServiceEntry, o.ObjectMeta, &o.Spec
	case *istionet.WorkloadEntry:
		kind, meta, spec = istioconfig.KindWorkloadEntry, o.ObjectMeta, &o.Spec
	case *istionet.VirtualService:
		kind, meta, spec = istioconfig.KindVirtualService, o.ObjectMeta, &o.Spec
	case *istionet.DestinationRule:
		kind, meta, spec = istioconfig.KindDestinationRule, o.ObjectMeta, &o.Spec
	case *istionet.Sidecar:
		kind, meta, spec = istioconfig.KindSidecar, o.ObjectMeta, &o.Spec
	case *istionet.Gateway:
		kind, meta, spec = istioconfig.KindGateway, o.ObjectMeta, &o.Spec
	case *istiosec.PeerAuthentication:
		kind, meta, spec = istioconfig.KindPeerAuthentication, o.ObjectMeta, &o.Spec
	case *istiosec.AuthorizationPolicy:
		kind, meta, spec = istioconfig.KindAuthorizationPolicy, o.ObjectMeta, &o.Spec
	case *istiosec.RequestAuthentication:
		kind, meta, spec = istioconfig.KindRequestAuthentication, o.ObjectMeta, &o.Spec
	default:
		return nil, fmt.Errorf("unexpected object %T from an informer", obj)
	}
	return &istioconfig.Config{
		Meta: istioconfig.Meta{Kind: kind, Name: meta.Name, Namespace: meta.Namespace, Labels: meta.Labels,
			Annotations: meta.Annotations, ResourceVersion: meta.ResourceVersion,
			CreationTimestamp: meta.CreationTimestamp.Time, Source: "kubernetes"},
		Spec: proto.Clone(spec),
	}, nil
}
