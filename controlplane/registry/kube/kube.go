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
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"
	istionet "istio.io/client-go/pkg/apis/networking/v1"
	istiosec "istio.io/client-go/pkg/apis/security/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	istioinformers "istio.io/client-go/pkg/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	// Pods also watches Pods and Nodes, as istiod does: an EndpointSlice endpoint that points
	// at a Pod (targetRef), or whose address is a ready Pod's IP in the slice's namespace,
	// takes the Pod's labels, service account and locality (its topology.istio.io/locality or
	// istio-locality label, else its Node's topology labels). An endpoint whose Pod is not
	// known yet is left out until the Pod is ready. Without it endpoints have no labels
	// (subsets select nothing) and no locality.
	Pods bool
	// Namespace limits the watch to one namespace; empty watches all.
	Namespace string
	// DomainSuffix of service hostnames (default cluster.local).
	DomainSuffix string
	// TrustDomain of the SPIFFE ids made from service accounts (default
	// registry.DefaultTrustDomain).
	TrustDomain string
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
	// kubeSynced is set (Run's goroutine) once the Kubernetes informers' initial lists were
	// applied; until then their events wait in held, to be applied Pods first.
	kubeSynced bool
	held       []event

	// mu guards notify and the state below, which only Run's goroutine writes: Subscribe
	// reads a consistent copy.
	mu     sync.Mutex
	notify func(registry.Update)
	// services are as last notified; base is each converted from its Service alone, before
	// the service accounts of its endpoints are added; selectors are the Services' selectors.
	services  map[nsName]*model.Service
	base      map[nsName]*model.Service
	selectors map[nsName]map[string]string
	endpoints map[string][]*model.Endpoint // by host, as last notified
	// epAccounts are the SPIFFE ids of a service's endpoints when it last had some: istiod
	// keeps them when the endpoints drop to none.
	epAccounts map[nsName][]string
	slicesOf   map[nsName]map[string]*discoveryv1.EndpointSlice
	// sliceEps are each slice's endpoints, converted when the slice (or the Pod it waited
	// for) last changed: like istiod's endpoint cache, a Pod's deletion leaves them as they are.
	sliceEps map[nsName]map[string][]*model.Endpoint
	sliceSvc map[nsName]nsName // slice → its service
	// pods by namespace/name (with Options.Pods), the ready ones by IP, and the slices waiting
	// for a Pod (by IP) that was not known when they were converted.
	pods     map[nsName]*corev1.Pod
	nodes    map[string]map[string]string // Node name → labels
	podsByIP map[string]map[nsName]bool
	ipOfPod  map[nsName]string
	waiting  map[string]map[nsName]bool // IP → slices
	waitsOn  map[nsName][]string        // slice → IPs
}

type nsName struct{ ns, name string }

func compareNsName(a, b nsName) int {
	return cmp.Or(strings.Compare(a.ns, b.ns), strings.Compare(a.name, b.name))
}

// event is one informer callback: obj is the new object, or nil for a delete of old.
type event struct {
	obj, old any
	// sync marks the end of the initial lists: Run closes Synced when it gets here. kubeSync
	// marks the end of the Kubernetes informers' initial lists.
	sync, kubeSync bool
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
	opts.TrustDomain = cmp.Or(opts.TrustDomain, registry.DefaultTrustDomain)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Controller{
		opts: opts, log: opts.Logger, signal: make(chan struct{}, 1), synced: make(chan struct{}),
		kubeSynced: opts.Kube == nil,
		services:   map[nsName]*model.Service{}, base: map[nsName]*model.Service{}, selectors: map[nsName]map[string]string{},
		endpoints: map[string][]*model.Endpoint{}, epAccounts: map[nsName][]string{},
		slicesOf: map[nsName]map[string]*discoveryv1.EndpointSlice{}, sliceEps: map[nsName]map[string][]*model.Endpoint{},
		sliceSvc: map[nsName]nsName{},
		pods:     map[nsName]*corev1.Pod{}, nodes: map[string]map[string]string{}, podsByIP: map[string]map[nsName]bool{}, ipOfPod: map[nsName]string{},
		waiting: map[string]map[nsName]bool{}, waitsOn: map[nsName][]string{},
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
//
// As istiod does, the Kubernetes objects are applied once their informers have all listed:
// Pods first, then Services and EndpointSlices, so that an endpoint finds its Pod.
func (c *Controller) Run(ctx context.Context, configs ConfigStore) error {
	if c.opts.Istio != nil && configs == nil {
		return errors.New("kube registry: Istio objects are watched but no config store was given")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		syncs, kubeSyncs []cache.InformerSynced
		factories        []interface {
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
			// The informers retry for ever; a list or watch the API server forbids would only
			// keep Synced open without a word: say what to grant, once per informer.
			var warned atomic.Bool
			if err := inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
				if apierrors.IsForbidden(err) && !warned.Swap(true) {
					c.log.Error("kube registry: the API server forbids listing or watching a resource the control plane reads: it waits until that is granted (list and watch; examples/kube/rbac.yaml has the ClusterRole)",
						"type", r.TypeDescription(), "error", err)
				}
				cache.DefaultWatchErrorHandler(ctx, r, err)
			}); err != nil {
				return fmt.Errorf("kube registry: %w", err)
			}
			reg, err := inf.AddEventHandler(handler)
			if err != nil {
				return fmt.Errorf("kube registry: %w", err)
			}
			syncs = append(syncs, reg.HasSynced)
		}
		return nil
	}
	if c.opts.Kube != nil {
		f := informers.NewSharedInformerFactoryWithOptions(c.opts.Kube, c.opts.Resync, informers.WithNamespace(c.opts.Namespace),
			informers.WithTransform(slim))
		infs := []cache.SharedIndexInformer{f.Core().V1().Services().Informer(), f.Discovery().V1().EndpointSlices().Informer()}
		if c.opts.Pods {
			infs = append(infs, f.Core().V1().Pods().Informer(), f.Core().V1().Nodes().Informer())
		}
		if err := watch(infs...); err != nil {
			return err
		}
		kubeSyncs = slices.Clone(syncs)
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
	// is not up yet), as istiod's do; Synced stays open until every initial list arrived. A
	// handler has synced once it was given every listed object, so the sync events come
	// after them in the queue.
	syncDone := make(chan struct{})
	go func() {
		defer close(syncDone)
		if len(kubeSyncs) > 0 {
			if !cache.WaitForCacheSync(ctx.Done(), kubeSyncs...) {
				return
			}
			c.enqueue(event{kubeSync: true})
		}
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
			switch {
			case ev.kubeSync:
				c.kubeSynced = true
				// Nodes, then Pods (stable: one object's events stay in order), then the rest.
				slices.SortStableFunc(c.held, func(a, b event) int { return cmp.Compare(heldRank(a), heldRank(b)) })
				for _, h := range c.held {
					c.handle(h, configs)
				}
				c.held = nil
			case ev.sync:
				c.log.Info("kube registry synced", "services", c.serviceCount())
				close(c.synced)
			case !c.kubeSynced && isKube(cmp.Or[any](ev.obj, ev.old)):
				c.held = append(c.held, ev)
			default:
				c.handle(ev, configs)
			}
		}
	}
}

func heldRank(ev event) int {
	switch cmp.Or[any](ev.obj, ev.old).(type) {
	case *corev1.Node:
		return 0
	case *corev1.Pod:
		return 1
	}
	return 2
}

func isKube(o any) bool {
	switch o.(type) {
	case *corev1.Service, *discoveryv1.EndpointSlice, *corev1.Pod, *corev1.Node:
		return true
	}
	return false
}

// slim is the Kubernetes informers' transform: the cache keeps only what the registry reads
// (no managed fields; of a Pod its labels, service account, node, IPs, phase and Ready
// condition; of a Node its labels), as istiod strips what it does not use.
func slim(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Node:
		return &corev1.Node{TypeMeta: o.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: o.Name, UID: o.UID,
			ResourceVersion: o.ResourceVersion, Labels: o.Labels}}, nil
	case *corev1.Pod:
		p := &corev1.Pod{TypeMeta: o.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, UID: o.UID,
			ResourceVersion: o.ResourceVersion, Labels: o.Labels, DeletionTimestamp: o.DeletionTimestamp},
			Spec:   corev1.PodSpec{ServiceAccountName: o.Spec.ServiceAccountName, NodeName: o.Spec.NodeName},
			Status: corev1.PodStatus{Phase: o.Status.Phase, PodIP: o.Status.PodIP, PodIPs: o.Status.PodIPs}}
		for _, cond := range o.Status.Conditions {
			if cond.Type == corev1.PodReady {
				p.Status.Conditions = []corev1.PodCondition{{Type: cond.Type, Status: cond.Status}}
			}
		}
		return p, nil
	case *corev1.Service:
		s := *o
		s.ManagedFields = nil
		return &s, nil
	case *discoveryv1.EndpointSlice:
		s := *o
		s.ManagedFields = nil
		return &s, nil
	}
	return obj, nil
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
	case *corev1.Node:
		// Read when an endpoint is converted; like istiod, a Node change converts nothing again.
		c.mu.Lock()
		if ev.obj == nil {
			delete(c.nodes, o.Name)
		} else {
			c.nodes[o.Name] = o.Labels
		}
		c.mu.Unlock()
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
	var base *model.Service
	if !deleted {
		base = convertService(s, host, c.opts.TrustDomain)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if base == nil {
		delete(c.selectors, k)
	} else {
		c.selectors[k] = s.Spec.Selector
	}
	prev := c.services[k]
	if base.Equal(c.base[k]) {
		return
	}
	if base == nil {
		delete(c.base, k)
		delete(c.services, k)
		delete(c.epAccounts, k)
		// The slices stay: a Service re-created with the same name finds them.
		u := registry.Update{Services: map[string]*model.Service{host: nil}}
		if _, ok := c.endpoints[host]; ok {
			delete(c.endpoints, host)
			u.Endpoints = map[string][]*model.Endpoint{host: nil}
		}
		c.send(u)
		return
	}
	c.base[k] = base
	if prev == nil {
		// Slices may have arrived before their Service: convert them now it is known.
		for name, es := range c.slicesOf[k] {
			c.convertSlice(k, name, es)
		}
	}
	c.refresh(k, true)
}

// sliceChanged applies a slice's add, update or delete. A slice whose service label changed
// leaves its old service.
func (c *Controller) sliceChanged(es *discoveryv1.EndpointSlice, deleted bool) {
	sk := nsName{es.Namespace, es.Name}
	svcName := es.Labels[discoveryv1.LabelServiceName]
	k := nsName{es.Namespace, svcName}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.sliceSvc[sk]; ok && (deleted || old != k) {
		delete(c.sliceSvc, sk)
		delete(c.slicesOf[old], es.Name)
		if len(c.slicesOf[old]) == 0 {
			delete(c.slicesOf, old)
		}
		delete(c.sliceEps[old], es.Name)
		if len(c.sliceEps[old]) == 0 {
			delete(c.sliceEps, old)
		}
		c.stopWaiting(sk)
		if c.services[old] != nil {
			c.refresh(old, false)
		}
	}
	if deleted || svcName == "" {
		return // gone, or not a Service's slice
	}
	if c.slicesOf[k] == nil {
		c.slicesOf[k] = map[string]*discoveryv1.EndpointSlice{}
	}
	c.slicesOf[k][es.Name] = es
	c.sliceSvc[sk] = k
	if c.services[k] == nil {
		return // endpoints without a Service are not part of the mesh (converted when it comes)
	}
	c.convertSlice(k, es.Name, es)
	c.refresh(k, false)
}

// podChanged records a Pod. Like istiod's Pod cache, it indexes ready, running Pods by IP;
// one that becomes ready converts again the slices that waited for it, and a label change of
// a ready Pod converts again the slices of the Services that select it. A Pod's deletion
// changes no endpoint: its slice's next update does.
func (c *Controller) podChanged(p *corev1.Pod, deleted bool) {
	k := nsName{p.Namespace, p.Name}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.pods[k]
	if deleted {
		delete(c.pods, k)
	} else {
		c.pods[k] = p
	}
	if deleted || !podServing(p) {
		c.unindexPod(k)
		return
	}
	ip := p.Status.PodIP
	if c.ipOfPod[k] == ip {
		if old != nil && !maps.Equal(old.Labels, p.Labels) {
			// The Services whose endpoints carry its labels: those selecting it before or after
			// the change, and selectorless ones whose slices list its IP.
			var svcs []nsName
			for sk, sel := range c.selectors {
				if sk.ns != p.Namespace {
					continue
				}
				if len(sel) > 0 && (model.LabelsMatch(sel, p.Labels) || model.LabelsMatch(sel, old.Labels)) ||
					len(sel) == 0 && c.slicesList(sk, ip) {
					svcs = append(svcs, sk)
				}
			}
			slices.SortFunc(svcs, compareNsName)
			for _, sk := range svcs {
				for name, es := range c.slicesOf[sk] {
					c.convertSlice(sk, name, es)
				}
				c.refresh(sk, false)
			}
		}
		return
	}
	c.unindexPod(k)
	if c.podsByIP[ip] == nil {
		c.podsByIP[ip] = map[nsName]bool{}
	}
	c.podsByIP[ip][k] = true
	c.ipOfPod[k] = ip
	waiting := slices.SortedFunc(maps.Keys(c.waiting[ip]), compareNsName)
	refresh := map[nsName]bool{}
	for _, sk := range waiting {
		svc, ok := c.sliceSvc[sk]
		if !ok {
			continue
		}
		c.convertSlice(svc, sk.name, c.slicesOf[svc][sk.name])
		refresh[svc] = true
	}
	for _, svc := range slices.SortedFunc(maps.Keys(refresh), compareNsName) {
		if c.services[svc] != nil {
			c.refresh(svc, false)
		}
	}
}

// slicesList reports whether one of svc's EndpointSlices lists address ip.
func (c *Controller) slicesList(svc nsName, ip string) bool {
	for _, es := range c.slicesOf[svc] {
		for _, e := range es.Endpoints {
			if slices.Contains(e.Addresses, ip) {
				return true
			}
		}
	}
	return false
}

// podServing is istiod's test for a Pod in its IP index: an IP, not terminal, not being
// deleted, and Ready.
func podServing(p *corev1.Pod) bool {
	if p.Status.PodIP == "" || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return false
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (c *Controller) unindexPod(k nsName) {
	ip, ok := c.ipOfPod[k]
	if !ok {
		return
	}
	delete(c.ipOfPod, k)
	delete(c.podsByIP[ip], k)
	if len(c.podsByIP[ip]) == 0 {
		delete(c.podsByIP, ip)
	}
}

// stopWaiting forgets the Pods slice sk waited for.
func (c *Controller) stopWaiting(sk nsName) {
	for _, ip := range c.waitsOn[sk] {
		delete(c.waiting[ip], sk)
		if len(c.waiting[ip]) == 0 {
			delete(c.waiting, ip)
		}
	}
	delete(c.waitsOn, sk)
}

// convertSlice converts slice name of service k into c.sliceEps; c.mu is held.
func (c *Controller) convertSlice(k nsName, name string, es *discoveryv1.EndpointSlice) {
	sk := nsName{es.Namespace, name}
	c.stopWaiting(sk)
	var pod podLookup
	if c.opts.Pods {
		pod = func(ip string, ref *corev1.ObjectReference) (*corev1.Pod, bool) {
			if ref != nil && ref.Kind == "Pod" {
				if p := c.pods[nsName{cmp.Or(ref.Namespace, es.Namespace), ref.Name}]; p != nil {
					return p, true
				}
				// Expected but not known yet: wait for a ready Pod with this IP.
				if c.waiting[ip] == nil {
					c.waiting[ip] = map[nsName]bool{}
				}
				if !c.waiting[ip][sk] {
					c.waiting[ip][sk] = true
					c.waitsOn[sk] = append(c.waitsOn[sk], ip)
				}
				return nil, true
			}
			// A slice entry without a Pod (a selectorless Service's): the ready Pod with its
			// IP in the slice's namespace, if any.
			for _, pk := range slices.SortedFunc(maps.Keys(c.podsByIP[ip]), compareNsName) {
				if pk.ns == es.Namespace {
					return c.pods[pk], false
				}
			}
			return nil, false
		}
	}
	eps := convertEndpointSlice(es, c.Hostname(k.ns, k.name), c.opts.TrustDomain, pod, c.nodes)
	if c.sliceEps[k] == nil {
		c.sliceEps[k] = map[string][]*model.Endpoint{}
	}
	c.sliceEps[k][name] = eps
}

// refresh merges the converted slices of service k and notifies what changed: its
// endpoints, and its service when forced or when the service accounts of its endpoints
// changed (as in istiod, that redefines the service: a full push). c.mu is held.
func (c *Controller) refresh(k nsName, serviceChanged bool) {
	host := c.Hostname(k.ns, k.name)
	eps := c.mergeEndpoints(k)
	if len(eps) > 0 {
		var sas []string
		for _, ep := range eps {
			if ep.ServiceAccount != "" {
				sas = append(sas, ep.ServiceAccount)
			}
		}
		slices.Sort(sas)
		c.epAccounts[k] = slices.Compact(sas)
	}
	svc := c.base[k]
	if extra := c.epAccounts[k]; len(extra) > 0 {
		cp := *svc
		cp.ServiceAccounts = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(svc.ServiceAccounts), extra...))))
		svc = &cp
	}
	var u registry.Update
	if serviceChanged || !svc.Equal(c.services[k]) {
		c.services[k] = svc
		u.Services = map[string]*model.Service{host: svc}
	}
	if !slices.EqualFunc(eps, c.endpoints[host], (*model.Endpoint).Equal) {
		if len(eps) == 0 {
			delete(c.endpoints, host)
		} else {
			c.endpoints[host] = eps
		}
		u.Endpoints = map[string][]*model.Endpoint{host: eps}
	}
	if u.Services != nil || u.Endpoints != nil {
		c.send(u)
	}
}

// send notifies the subscriber; c.mu is held, so Subscribe cannot interleave.
func (c *Controller) send(u registry.Update) {
	if c.notify != nil {
		c.notify(u)
	}
}

// mergeEndpoints joins the converted slices of service k, in slice name order. As istiod
// dedupes its endpoints by address and port name, an address listed by several slices is one
// endpoint with the ports of all of them (the first slice's when they name the same port) and
// the rest of the first slice's entry.
func (c *Controller) mergeEndpoints(k nsName) []*model.Endpoint {
	var out []*model.Endpoint
	byAddr := map[string]*model.Endpoint{}
	for _, name := range slices.Sorted(maps.Keys(c.sliceEps[k])) {
		for _, ep := range c.sliceEps[k][name] {
			first := byAddr[ep.Address]
			if first == nil {
				byAddr[ep.Address] = ep
				out = append(out, ep)
				continue
			}
			if hasAllPorts(first.Ports, ep.Ports) {
				continue
			}
			merged := *first
			merged.Ports = maps.Clone(first.Ports)
			for n, p := range ep.Ports {
				if _, ok := merged.Ports[n]; !ok {
					merged.Ports[n] = p
				}
			}
			byAddr[ep.Address] = &merged
			out[slices.Index(out, first)] = &merged
		}
	}
	slices.SortFunc(out, model.CompareEndpoints)
	return out
}

func hasAllPorts(have, ports map[string]uint32) bool {
	for n := range ports {
		if _, ok := have[n]; !ok {
			return false
		}
	}
	return true
}

// AnnotationExportTo is Istio's annotation that sets a Kubernetes Service's exportTo.
const AnnotationExportTo = "networking.istio.io/exportTo"

// Istio's annotations that name a Service's service accounts beyond its Pods': Kubernetes
// service accounts of the Service's namespace, and identities used as they are.
const (
	AnnotationKubernetesServiceAccounts = "alpha.istio.io/kubernetes-serviceaccounts"
	AnnotationCanonicalServiceAccounts  = "alpha.istio.io/canonical-serviceaccounts"
)

// ConvertService turns a Service into the mesh's view of it (nil for an ExternalName Service,
// which has no endpoints of its own), with the default trust domain. Its ClusterIP is its
// address (none for a headless Service, which resolves as passthrough, as Istio treats it; a
// dual-stack Service's other IPs are left out, as istiod does without ISTIO_DUAL_STACK); a
// port's protocol is Istio's (see portProtocol). Istio's annotation
// networking.istio.io/exportTo (a comma-separated list) is its exportTo; its service accounts
// are those of the alpha.istio.io service-account annotations (the Controller adds its
// endpoints' ones). Its traffic distribution is spec.trafficDistribution's, else Istio's
// annotation's (model.ParseTrafficDistribution; istiod's namespace annotation is not read).
func ConvertService(s *corev1.Service, host string) *model.Service {
	return convertService(s, host, registry.DefaultTrustDomain)
}

func convertService(s *corev1.Service, host, trustDomain string) *model.Service {
	if s.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	svc := &model.Service{Hostname: host, Namespace: s.Namespace, Labels: s.Labels,
		Source: istioconfig.Key{Kind: model.KindService, Name: s.Name, Namespace: s.Namespace}, CreationTime: s.CreationTimestamp.Time}
	if v, ok := s.Annotations[AnnotationExportTo]; ok {
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				svc.ExportTo = append(svc.ExportTo, e)
			}
		}
	}
	if v := s.Annotations[AnnotationCanonicalServiceAccounts]; v != "" {
		svc.ServiceAccounts = append(svc.ServiceAccounts, strings.Split(v, ",")...)
	}
	if v := s.Annotations[AnnotationKubernetesServiceAccounts]; v != "" {
		for _, sa := range strings.Split(v, ",") {
			svc.ServiceAccounts = append(svc.ServiceAccounts, registry.SpiffeID(trustDomain, s.Namespace, sa))
		}
	}
	if len(svc.ServiceAccounts) > 0 {
		slices.Sort(svc.ServiceAccounts)
		svc.ServiceAccounts = slices.Compact(svc.ServiceAccounts)
	}
	svc.TrafficDistribution = model.ParseTrafficDistribution(ptrOr(s.Spec.TrafficDistribution, ""), s.Annotations[model.AnnotationTrafficDistribution])
	if ip := s.Spec.ClusterIP; ip != "" && ip != corev1.ClusterIPNone {
		svc.Addresses = []string{ip}
	}
	if s.Spec.ClusterIP == corev1.ClusterIPNone {
		svc.Resolution = model.ResolutionPassthrough
	}
	for _, p := range s.Spec.Ports {
		svc.Ports = append(svc.Ports, model.Port{Name: p.Name, Number: uint32(p.Port), Protocol: portProtocol(p.Port, p.Name, p.AppProtocol, p.Protocol)})
	}
	return svc
}

// portProtocol is Istio's protocol of a Service port (istioconfig.KubePortProtocol): UDP for a
// UDP port (nothing is generated for it), unknown (sniffed) when nothing names one.
func portProtocol(port int32, name string, appProtocol *string, l4 corev1.Protocol) model.Protocol {
	p := istioconfig.KubePortProtocol(port, name, appProtocol, l4 == corev1.ProtocolUDP)
	if p == "" {
		return model.ProtocolUnknown
	}
	return model.ParseProtocol(p)
}

// podLookup returns the Pod of a slice entry's address and targetRef (nil when none is
// known), and whether the entry names a Pod (which then must be known for an endpoint).
type podLookup func(ip string, ref *corev1.ObjectReference) (pod *corev1.Pod, expected bool)

// convertEndpointSlice returns the endpoints of a slice, as istiod builds them: one per
// address of each entry, with the slice's ports by name (and those only: a service port the
// slice does not list is not served). An entry that is ready (Kubernetes'
// ready condition: unset means ready) is healthy; one not ready is left out when terminating
// (unless the slice says terminating false) and unhealthy otherwise. An FQDN slice gives
// nothing (istiod skips them). Labels, service account and locality live on Pods: pod (nil:
// none read) finds an entry's Pod; an entry whose Pod is expected but not known is left out.
func convertEndpointSlice(es *discoveryv1.EndpointSlice, host, trustDomain string, pod podLookup, nodes map[string]map[string]string) []*model.Endpoint {
	if es.AddressType == discoveryv1.AddressTypeFQDN {
		return nil
	}
	ports := map[string]uint32{}
	for _, p := range es.Ports {
		if p.Port != nil {
			ports[ptrOr(p.Name, "")] = uint32(*p.Port)
		}
	}
	src := istioconfig.Key{Kind: KindEndpointSlice, Name: es.Name, Namespace: es.Namespace}
	var out []*model.Endpoint
	for _, e := range es.Endpoints {
		health := model.Healthy
		if !ptrOr(e.Conditions.Ready, true) {
			if ptrOr(e.Conditions.Terminating, true) {
				continue
			}
			health = model.Unhealthy
		}
		for _, addr := range e.Addresses {
			ep := &model.Endpoint{Service: host, Address: addr, Ports: ports, OnlyListedPorts: true, Health: health, Source: src}
			if pod != nil {
				p, expected := pod(addr, e.TargetRef)
				if p == nil && expected {
					continue
				}
				if p != nil {
					applyPod(ep, p, trustDomain, nodes[p.Spec.NodeName])
				}
			}
			out = append(out, ep)
		}
	}
	return out
}

// LocalityLabel is Istio's Pod label for a workload's locality, region.zone.subzone.
const LocalityLabel = "istio-locality"

// Node labels of a locality: Kubernetes' topology labels (and their deprecated beta names),
// and Istio's subzone.
const (
	NodeRegionLabel     = "topology.kubernetes.io/region"
	NodeZoneLabel       = "topology.kubernetes.io/zone"
	nodeRegionLabelBeta = "failure-domain.beta.kubernetes.io/region"
	nodeZoneLabelBeta   = "failure-domain.beta.kubernetes.io/zone"
	NodeSubzoneLabel    = "topology.istio.io/subzone"
)

// applyPod gives an endpoint what its Pod says: labels, service account (as a SPIFFE id), and
// locality, as istiod's getPodLocality reads it: its locality label's
// (model.LocalityFromLabel: topology.istio.io/locality, else istio-locality, whichever key it
// has first even when empty; "." read as "/" in a value without "/", parts past the third
// dropped) when that is not empty, else its Node's (node: the labels of the Pod's Node, nil
// when not known).
func applyPod(ep *model.Endpoint, p *corev1.Pod, trustDomain string, node map[string]string) {
	ep.ServiceAccount = registry.SpiffeID(trustDomain, p.Namespace, p.Spec.ServiceAccountName)
	if loc, ok := model.LocalityFromLabel(p.Labels); ok {
		ep.Locality = loc
	} else {
		ep.Locality = model.Locality{Region: cmp.Or(node[NodeRegionLabel], node[nodeRegionLabelBeta]),
			Zone: cmp.Or(node[NodeZoneLabel], node[nodeZoneLabelBeta]), SubZone: node[NodeSubzoneLabel]}
	}
	// With the topology labels istiod's registry adds (its node's name too).
	ep.Labels = model.RegistryLabels(p.Labels, ep.Locality, p.Spec.NodeName, "")
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
