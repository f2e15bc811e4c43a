package gen

import (
	"math"
	"time"

	proxyprotocolv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/proxy_protocol/v3"
	rawbufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/raw_buffer/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdslab/xdslab/controlplane/config/validate"
	"github.com/xdslab/xdslab/controlplane/model"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"
)

// DefaultConnectTimeout is Istio's default cluster connect timeout.
const DefaultConnectTimeout = 10 * time.Second

// httpProtocolOptionsName is the typed_extension_protocol_options key for upstream HTTP options.
const httpProtocolOptionsName = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"

// policy is the traffic policy in effect for one cluster, merged as istiod merges it: a
// DestinationRule's top-level policy, replaced as a whole (load balancer, connection pool,
// outlier detection and client TLS, unset ones included) by its port-level settings for the
// port; then the subset's policy, each group replacing the rule's when set, all four when the
// subset has port-level settings for the port.
//
// distribution is not the rule's: it is the service's traffic distribution, which istiod
// reads when the rule sets no locality load balancing (locality.go).
//
// retryBudget and proxyProtocol have no port-level form: the rule's, unless port-level
// settings for the port replace the policy (they drop them), replaced by the subset's when it
// sets one without port-level settings for the port.
type policy struct {
	lb            *networking.LoadBalancerSettings
	pool          *networking.ConnectionPoolSettings
	outlier       *networking.OutlierDetection
	tls           *networking.ClientTLSSettings
	retryBudget   *networking.TrafficPolicy_RetryBudget
	proxyProtocol *networking.TrafficPolicy_ProxyProtocol
	distribution  model.TrafficDistribution
}

func effectivePolicy(dr *networking.DestinationRule, port uint32, ss *networking.Subset) policy {
	p, _ := portPolicy(dr.GetTrafficPolicy(), port)
	if tp := ss.GetTrafficPolicy(); tp != nil {
		sp, portLevel := portPolicy(tp, port)
		if sp.retryBudget != nil {
			p.retryBudget = sp.retryBudget
		}
		if sp.proxyProtocol != nil {
			p.proxyProtocol = sp.proxyProtocol
		}
		if sp.lb != nil || portLevel {
			p.lb = sp.lb
		}
		if sp.pool != nil || portLevel {
			p.pool = sp.pool
		}
		if sp.outlier != nil || portLevel {
			p.outlier = sp.outlier
		}
		if sp.tls != nil || portLevel {
			p.tls = sp.tls
		}
	}
	return p
}

// portPolicy is tp for port: its port-level settings for the port when it has some (they do
// not inherit: what they leave unset is unset), else its top-level groups.
func portPolicy(tp *networking.TrafficPolicy, port uint32) (policy, bool) {
	for _, pl := range tp.GetPortLevelSettings() {
		if pl.GetPort() != nil && pl.GetPort().GetNumber() == port {
			return policy{lb: pl.GetLoadBalancer(), pool: pl.GetConnectionPool(), outlier: pl.GetOutlierDetection(), tls: pl.GetTls()}, true
		}
	}
	return policy{lb: tp.GetLoadBalancer(), pool: tp.GetConnectionPool(), outlier: tp.GetOutlierDetection(), tls: tp.GetTls(), retryBudget: tp.GetRetryBudget(), proxyProtocol: tp.GetProxyProtocol()}, false
}

// applyLB sets the cluster's lb_policy, and for consistent hashing its lb_config (applyHashLB).
// grpc restricts the result to what grpc-go accepts (ROUND_ROBIN, RING_HASH, LEAST_REQUEST).
func (p policy) applyLB(c *clusterv3.Cluster, grpc bool) {
	c.LbPolicy = clusterv3.Cluster_LEAST_REQUEST // Istio's default
	if grpc {
		c.LbPolicy = clusterv3.Cluster_ROUND_ROBIN
	}
	if p.lb == nil {
		return
	}
	switch p.lb.GetSimple() {
	case networking.LoadBalancerSettings_ROUND_ROBIN:
		c.LbPolicy = clusterv3.Cluster_ROUND_ROBIN
	case networking.LoadBalancerSettings_LEAST_CONN, networking.LoadBalancerSettings_LEAST_REQUEST:
		c.LbPolicy = clusterv3.Cluster_LEAST_REQUEST
	case networking.LoadBalancerSettings_RANDOM:
		if !grpc {
			c.LbPolicy = clusterv3.Cluster_RANDOM
		}
	case networking.LoadBalancerSettings_PASSTHROUGH:
		if !grpc {
			c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_ORIGINAL_DST}
			c.LbPolicy = clusterv3.Cluster_CLUSTER_PROVIDED
			c.EdsClusterConfig = nil
			c.LoadAssignment = nil
		}
	}
	if sc := slowStart(p.lb); sc != nil && !grpc {
		// istiod's warmup, on round robin and least request only (also the default, which
		// a consistent hash then replaces: its lb_config when it sets one, else the policy
		// alone). istiod's gRPC generator has none.
		switch c.LbPolicy {
		case clusterv3.Cluster_ROUND_ROBIN:
			c.LbConfig = &clusterv3.Cluster_RoundRobinLbConfig_{RoundRobinLbConfig: &clusterv3.Cluster_RoundRobinLbConfig{SlowStartConfig: sc}}
		case clusterv3.Cluster_LEAST_REQUEST:
			c.LbConfig = &clusterv3.Cluster_LeastRequestLbConfig_{LeastRequestLbConfig: &clusterv3.Cluster_LeastRequestLbConfig{SlowStartConfig: sc}}
		}
	}
	if ch := p.lb.GetConsistentHash(); ch != nil {
		applyHashLB(c, ch, grpc)
	}
}

// slowStart is a load balancer's warmup as istiod sets it: warmup's duration, aggression
// (default 1, linear) and minimum weight (default 10 %); the deprecated warmupDurationSecs
// alone gives the window only. nil without either.
func slowStart(lb *networking.LoadBalancerSettings) *clusterv3.Cluster_SlowStartConfig {
	if w := lb.GetWarmup(); w != nil {
		sc := &clusterv3.Cluster_SlowStartConfig{
			// istiod fixes the value; a runtime key must be non-empty, and istiod's is "(".
			Aggression:       &corev3.RuntimeDouble{DefaultValue: 1, RuntimeKey: "("},
			MinWeightPercent: &typev3.Percent{Value: 10},
		}
		if d := w.GetDuration(); d != nil {
			sc.SlowStartWindow = durationpb.New(d.AsDuration())
		}
		if a := w.GetAggression(); a != nil {
			sc.Aggression.DefaultValue = a.GetValue()
		}
		if m := w.GetMinimumPercent(); m != nil {
			sc.MinWeightPercent.Value = m.GetValue()
		}
		return sc
	}
	if d := lb.GetWarmupDurationSecs(); d != nil {
		return &clusterv3.Cluster_SlowStartConfig{SlowStartWindow: durationpb.New(d.AsDuration())}
	}
	return nil
}

// Envoy's bound on a ring (its API validation: at most 8M entries); a Maglev table size is
// checked by validate.MaglevTableSize.
const (
	maxRingSize       = 8 * 1024 * 1024
	defaultRingSizeLB = 1024 // Envoy's default minimum ring size, which istiod spells out
)

// applyHashLB sets a consistent-hash cluster's lb_policy and lb_config as istiod does: maglev
// is MAGLEV, with maglev_lb_config.table_size when tableSize is set; ringHash is RING_HASH,
// with ring_hash_lb_config.minimum_ring_size when minimumRingSize is set; neither is RING_HASH
// with ring_hash_lb_config.minimum_ring_size always set, to the deprecated top-level
// minimumRingSize or 1024 (the deprecated field counts only then). Beyond istiod, values
// Envoy would reject are not sent: a ring size is capped at 8M (grpc-go's bound too), a table
// size that is not a prime below 5000011 (Istio's validation rejects it) is left to Envoy's
// default. grpc-go has no Maglev: for proxyless gRPC maglev is RING_HASH with grpc-go's
// default ring.
func applyHashLB(c *clusterv3.Cluster, ch *networking.LoadBalancerSettings_ConsistentHashLB, grpc bool) {
	c.LbPolicy = clusterv3.Cluster_RING_HASH
	ring := func(size uint64) {
		c.LbConfig = &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterv3.Cluster_RingHashLbConfig{
			MinimumRingSize: wrapperspb.UInt64(min(size, maxRingSize)),
		}}
	}
	switch {
	case ch.GetMaglev() != nil:
		if grpc {
			return
		}
		c.LbPolicy = clusterv3.Cluster_MAGLEV
		if n := ch.GetMaglev().GetTableSize(); n > 1 && validate.MaglevTableSize(n) {
			c.LbConfig = &clusterv3.Cluster_MaglevLbConfig_{MaglevLbConfig: &clusterv3.Cluster_MaglevLbConfig{TableSize: wrapperspb.UInt64(n)}}
		}
	case ch.GetRingHash() != nil:
		if n := ch.GetRingHash().GetMinimumRingSize(); n != 0 {
			ring(n)
		}
	default:
		n := ch.GetMinimumRingSize() //nolint:staticcheck // deprecated, still honoured by istiod
		if n == 0 {
			n = defaultRingSizeLB
		}
		ring(n)
	}
}

// shared holds sub-messages that many clusters of one Generate call have in common, built once:
// generated resources are immutable, so sharing them is safe and saves most of the allocations
// of a cluster.
type shared struct {
	proxy      *model.Proxy // the proxy the clusters are for
	noPanic    *clusterv3.Cluster_CommonLbConfig
	istioTSM   *structpb.Struct
	rawTSM     *clusterv3.Cluster_TransportSocketMatch
	nsMTLS     map[string]mtlsMode
	wlMTLS     *workloadMTLS
	downstream map[string]*anypb.Any
	ads        *corev3.ConfigSource
	timeout    *durationpb.Duration
	thresholds *clusterv3.CircuitBreakers
	h2         map[string]*anypb.Any
}

// panicDisabled is Istio's default load-balancer config: the healthy panic threshold at 0, so
// Envoy never spreads traffic over unhealthy endpoints (istiod sends them, marked unhealthy).
func (sh *shared) panicDisabled() *clusterv3.Cluster_CommonLbConfig {
	if sh.noPanic == nil {
		sh.noPanic = &clusterv3.Cluster_CommonLbConfig{HealthyPanicThreshold: &typev3.Percent{}}
	}
	return sh.noPanic
}

// istioMatch is the match of auto-mTLS's TLS socket: endpoint metadata tlsMode "istio".
func (sh *shared) istioMatch() *structpb.Struct {
	if sh.istioTSM == nil {
		sh.istioTSM = &structpb.Struct{Fields: map[string]*structpb.Value{"tlsMode": structpb.NewStringValue(tlsModeIstio)}}
	}
	return sh.istioTSM
}

// plaintextMatch is auto-mTLS's fallback: every other endpoint gets raw_buffer.
func (sh *shared) plaintextMatch() *clusterv3.Cluster_TransportSocketMatch {
	if sh.rawTSM == nil {
		sh.rawTSM = &clusterv3.Cluster_TransportSocketMatch{
			Name:  "tlsMode-disabled",
			Match: &structpb.Struct{},
			TransportSocket: &corev3.TransportSocket{Name: rawBufferSocketName, ConfigType: &corev3.TransportSocket_TypedConfig{
				TypedConfig: toAny(&rawbufferv3.RawBuffer{}),
			}},
		}
	}
	return sh.rawTSM
}

// namespaceMTLS is the mesh-wide or namespace PeerAuthentication mode of ns, memoized.
func (sh *shared) namespaceMTLS(s *model.Snapshot, ns string) mtlsMode {
	if m, ok := sh.nsMTLS[ns]; ok {
		return m
	}
	if sh.nsMTLS == nil {
		sh.nsMTLS = map[string]mtlsMode{}
	}
	m := namespaceMTLS(s, ns)
	sh.nsMTLS[ns] = m
	return m
}

// downstreamProtocol is the upstream HTTP protocol options of a sniffed port: the protocol the
// downstream spoke.
func (sh *shared) downstreamProtocol() map[string]*anypb.Any {
	if sh.downstream == nil {
		sh.downstream = map[string]*anypb.Any{httpProtocolOptionsName: toAny(&upstreamhttpv3.HttpProtocolOptions{
			UpstreamProtocolOptions: useDownstreamConfig(),
		})}
	}
	return sh.downstream
}

// useDownstreamProtocol makes the cluster of a sniffed port speak upstream the protocol the
// client spoke, as istiod does (setUseDownstreamProtocol before applying the connection pool):
// the shared options when the pool set none, else the pool's HTTP options (its idle timeout,
// requests per connection, …) with use_downstream_protocol_config in place of HTTP/1.1. A pool
// that upgrades to HTTP/2 keeps its HTTP/2 options (the caller does not call this then).
func useDownstreamProtocol(sh *shared, c *clusterv3.Cluster) {
	a := c.TypedExtensionProtocolOptions[httpProtocolOptionsName]
	if a == nil {
		c.TypedExtensionProtocolOptions = sh.downstreamProtocol()
		return
	}
	opts := &upstreamhttpv3.HttpProtocolOptions{}
	if err := a.UnmarshalTo(opts); err != nil {
		c.TypedExtensionProtocolOptions = sh.downstreamProtocol()
		return
	}
	opts.UpstreamProtocolOptions = useDownstreamConfig()
	c.TypedExtensionProtocolOptions = map[string]*anypb.Any{httpProtocolOptionsName: toAny(opts)}
}

// useDownstreamConfig is istiod's use_downstream_protocol_config: HTTP/1.1 or HTTP/2 upstream
// as the client spoke.
func useDownstreamConfig() *upstreamhttpv3.HttpProtocolOptions_UseDownstreamProtocolConfig {
	return &upstreamhttpv3.HttpProtocolOptions_UseDownstreamProtocolConfig{
		UseDownstreamProtocolConfig: &upstreamhttpv3.HttpProtocolOptions_UseDownstreamHttpConfig{
			HttpProtocolOptions:  &corev3.Http1ProtocolOptions{},
			Http2ProtocolOptions: &corev3.Http2ProtocolOptions{},
		},
	}
}

func (sh *shared) workloadMTLS(s *model.Snapshot) *workloadMTLS {
	if sh.wlMTLS == nil {
		sh.wlMTLS = newWorkloadMTLS(s)
	}
	return sh.wlMTLS
}

func (sh *shared) adsSource() *corev3.ConfigSource {
	if sh.ads == nil {
		sh.ads = adsWaitingSource()
	}
	return sh.ads
}

func (sh *shared) defaultTimeout() *durationpb.Duration {
	if sh.timeout == nil {
		sh.timeout = durationpb.New(DefaultConnectTimeout)
	}
	return sh.timeout
}

func (sh *shared) defaultBreakers() *clusterv3.CircuitBreakers {
	if sh.thresholds == nil {
		sh.thresholds = &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{defaultThresholds()}}
	}
	return sh.thresholds
}

// protocolOptions returns the typed_extension_protocol_options map for HTTP/2 or HTTP/1 with no
// common options (the frequent cases), shared.
func (sh *shared) protocolOptions(h2 bool) map[string]*anypb.Any {
	k := "h1"
	if h2 {
		k = "h2"
	}
	if a := sh.h2[k]; a != nil {
		return map[string]*anypb.Any{httpProtocolOptionsName: a}
	}
	if sh.h2 == nil {
		sh.h2 = map[string]*anypb.Any{}
	}
	a := toAny(httpOptions(h2, nil))
	sh.h2[k] = a
	return map[string]*anypb.Any{httpProtocolOptionsName: a}
}

// defaultThresholds are Istio's: no limits.
func defaultThresholds() *clusterv3.CircuitBreakers_Thresholds {
	return &clusterv3.CircuitBreakers_Thresholds{
		Priority:           corev3.RoutingPriority_DEFAULT,
		MaxConnections:     wrapperspb.UInt32(math.MaxUint32),
		MaxPendingRequests: wrapperspb.UInt32(math.MaxUint32),
		MaxRequests:        wrapperspb.UInt32(math.MaxUint32),
		MaxRetries:         wrapperspb.UInt32(math.MaxUint32),
	}
}

func httpOptions(h2 bool, common *corev3.HttpProtocolOptions) *upstreamhttpv3.HttpProtocolOptions {
	opts := &upstreamhttpv3.HttpProtocolOptions{CommonHttpProtocolOptions: common}
	explicit := &upstreamhttpv3.HttpProtocolOptions_ExplicitHttpConfig{}
	if h2 {
		explicit.ProtocolConfig = &upstreamhttpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: &corev3.Http2ProtocolOptions{}}
	} else {
		explicit.ProtocolConfig = &upstreamhttpv3.HttpProtocolOptions_ExplicitHttpConfig_HttpProtocolOptions{HttpProtocolOptions: &corev3.Http1ProtocolOptions{}}
	}
	opts.UpstreamProtocolOptions = &upstreamhttpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: explicit}
	return opts
}

// applyPool sets connect timeout, circuit breakers and upstream HTTP options, as istiod: the
// connection's idle timeout (connectionPool.http.idleTimeout, else tcp.idleTimeout), maximum
// duration (tcp.maxConnectionDuration) and requests per connection go to the cluster's common
// HTTP protocol options, whatever the port's protocol (Envoy applies them to HTTP upstreams;
// a TCP port's tcp_proxy takes the tcp ones, tcproute.go); on HTTP/2 upstreams also the
// maximum concurrent streams and the HTTP/2 keepalive. h2 says the port's protocol is HTTP/2;
// upgrade says whether the pool's h2UpgradePolicy UPGRADE may make it HTTP/2 (istiod upgrades
// outbound clusters only, and not a sidecar's cluster of a sniffed port, whose upstream
// protocol is already the client's; not with useClientProtocol, which makes it the client's
// on any port). It reports whether the cluster speaks HTTP/2 upstream (always, not as the
// client does).
func (p policy) applyPool(sh *shared, c *clusterv3.Cluster, h2, upgrade bool) bool {
	c.ConnectTimeout = sh.defaultTimeout()
	if p.pool == nil {
		c.CircuitBreakers = sh.defaultBreakers()
		if p.retryBudget != nil {
			th := defaultThresholds()
			th.RetryBudget = retryBudgetOf(p.retryBudget)
			c.CircuitBreakers = &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{th}}
		}
		if h2 {
			c.TypedExtensionProtocolOptions = sh.protocolOptions(true)
		}
		return h2
	}
	th := defaultThresholds()
	if p.retryBudget != nil {
		th.RetryBudget = retryBudgetOf(p.retryBudget)
	}
	var common *corev3.HttpProtocolOptions
	commonOpts := func() *corev3.HttpProtocolOptions {
		if common == nil {
			common = &corev3.HttpProtocolOptions{}
		}
		return common
	}
	hs, tcp := p.pool.GetHttp(), p.pool.GetTcp()
	if tcp != nil {
		if tcp.GetMaxConnections() > 0 {
			th.MaxConnections = wrapperspb.UInt32(uint32(tcp.GetMaxConnections()))
		}
		if d := tcp.GetConnectTimeout(); d != nil && d.AsDuration() > 0 {
			c.ConnectTimeout = durationpb.New(d.AsDuration())
		}
		if d := tcp.GetMaxConnectionDuration(); d != nil {
			commonOpts().MaxConnectionDuration = durationpb.New(d.AsDuration())
		}
		if ka := tcp.GetTcpKeepalive(); ka != nil {
			c.UpstreamConnectionOptions = &clusterv3.UpstreamConnectionOptions{TcpKeepalive: tcpKeepaliveOf(ka)}
		}
	}
	if hs != nil {
		if v := hs.GetHttp1MaxPendingRequests(); v > 0 {
			th.MaxPendingRequests = wrapperspb.UInt32(uint32(v))
		}
		if v := hs.GetHttp2MaxRequests(); v > 0 {
			th.MaxRequests = wrapperspb.UInt32(uint32(v))
		}
		if v := hs.GetMaxRetries(); v > 0 {
			th.MaxRetries = wrapperspb.UInt32(uint32(v))
		}
		if v := hs.GetMaxRequestsPerConnection(); v > 0 {
			commonOpts().MaxRequestsPerConnection = wrapperspb.UInt32(uint32(v))
		}
		if upgrade && !hs.GetUseClientProtocol() && hs.GetH2UpgradePolicy() == networking.ConnectionPoolSettings_HTTPSettings_UPGRADE {
			h2 = true
		}
	}
	if d := hs.GetIdleTimeout(); d != nil {
		commonOpts().IdleTimeout = durationpb.New(d.AsDuration())
	} else if d := tcp.GetIdleTimeout(); d != nil {
		commonOpts().IdleTimeout = durationpb.New(d.AsDuration())
	}
	var h2opts *corev3.Http2ProtocolOptions
	if hs.GetMaxConcurrentStreams() > 0 || hs.GetHttp2KeepAlive() != nil {
		commonOpts() // istiod spells out empty common options here (and ignores both on HTTP/1)
	}
	if h2 && (hs.GetMaxConcurrentStreams() > 0 || hs.GetHttp2KeepAlive() != nil) {
		h2opts = &corev3.Http2ProtocolOptions{}
		if v := hs.GetMaxConcurrentStreams(); v > 0 {
			h2opts.MaxConcurrentStreams = wrapperspb.UInt32(uint32(v))
		}
		if ka := hs.GetHttp2KeepAlive(); ka != nil {
			h2opts.ConnectionKeepalive = &corev3.KeepaliveSettings{}
			if d := ka.GetInterval(); d != nil {
				h2opts.ConnectionKeepalive.Interval = durationpb.New(d.AsDuration())
			}
			if d := ka.GetTimeout(); d != nil {
				h2opts.ConnectionKeepalive.Timeout = durationpb.New(d.AsDuration())
			}
		}
	}
	c.CircuitBreakers = &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{th}}
	switch {
	case common != nil || h2opts != nil:
		opts := httpOptions(h2, common)
		if h2opts != nil {
			opts.GetExplicitHttpConfig().ProtocolConfig = &upstreamhttpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: h2opts}
		}
		c.TypedExtensionProtocolOptions = map[string]*anypb.Any{httpProtocolOptionsName: toAny(opts)}
	case h2:
		c.TypedExtensionProtocolOptions = sh.protocolOptions(true)
	}
	if hs.GetUseClientProtocol() {
		// HTTP/1.1 or HTTP/2 upstream as the client spoke it, whatever the port's protocol
		// (istiod then neither upgrades nor keeps the HTTP/2 options), on every port and
		// inbound too, as istiod's applyConnectionPool.
		useDownstreamProtocol(sh, c)
		return false
	}
	return h2
}

// upstreamProxyProtocolSocketName is Envoy's transport socket that sends a PROXY protocol
// header before the wrapped socket's bytes.
const upstreamProxyProtocolSocketName = "envoy.transport_sockets.upstream_proxy_protocol"

// applyProxyProtocol wraps the cluster's transport sockets (each auto-mTLS match's too, or a
// raw buffer when it has none) in the upstream PROXY protocol socket of the policy's version,
// as istiod does for outbound clusters. The shared matches are copied, never modified.
func (p policy) applyProxyProtocol(c *clusterv3.Cluster) {
	pp := p.proxyProtocol
	if pp == nil {
		return
	}
	wrap := func(inner *corev3.TransportSocket) *corev3.TransportSocket {
		return &corev3.TransportSocket{Name: upstreamProxyProtocolSocketName, ConfigType: &corev3.TransportSocket_TypedConfig{
			TypedConfig: toAny(&proxyprotocolv3.ProxyProtocolUpstreamTransport{
				Config:          &corev3.ProxyProtocolConfig{Version: corev3.ProxyProtocolConfig_Version(pp.GetVersion())},
				TransportSocket: inner,
			}),
		}}
	}
	if c.TransportSocket == nil && len(c.TransportSocketMatches) == 0 {
		// istiod names this raw buffer by its short legacy name (Envoy picks the socket by type).
		c.TransportSocket = wrap(&corev3.TransportSocket{Name: "raw_buffer", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: toAny(&rawbufferv3.RawBuffer{})}})
		return
	}
	if c.TransportSocket != nil {
		c.TransportSocket = wrap(c.TransportSocket)
	}
	if len(c.TransportSocketMatches) > 0 {
		ms := make([]*clusterv3.Cluster_TransportSocketMatch, 0, len(c.TransportSocketMatches))
		for _, m := range c.TransportSocketMatches {
			ms = append(ms, &clusterv3.Cluster_TransportSocketMatch{Name: m.GetName(), Match: m.GetMatch(), TransportSocket: wrap(m.GetTransportSocket())})
		}
		c.TransportSocketMatches = ms
	}
}

// tcpKeepaliveOf is a connection pool's TCP keepalive as istiod sets it on the cluster's
// upstream connections: SO_KEEPALIVE with the OS defaults, each value set overriding its
// default (time and interval in whole seconds, the rest dropped).
func tcpKeepaliveOf(ka *networking.ConnectionPoolSettings_TCPSettings_TcpKeepalive) *corev3.TcpKeepalive {
	out := &corev3.TcpKeepalive{}
	if n := ka.GetProbes(); n > 0 {
		out.KeepaliveProbes = wrapperspb.UInt32(n)
	}
	if d := ka.GetTime(); d != nil {
		out.KeepaliveTime = wrapperspb.UInt32(uint32(d.GetSeconds()))
	}
	if d := ka.GetInterval(); d != nil {
		out.KeepaliveInterval = wrapperspb.UInt32(uint32(d.GetSeconds()))
	}
	return out
}

// retryBudgetOf is a traffic policy's retry budget as istiod sets it on the circuit breaker
// thresholds: 20 % of active requests and a minimum concurrency of 3 unless set, the interval
// as given (Envoy's 10 s when unset); nil for a percentage Envoy rejects.
func retryBudgetOf(rb *networking.TrafficPolicy_RetryBudget) *clusterv3.CircuitBreakers_Thresholds_RetryBudget {
	out := &clusterv3.CircuitBreakers_Thresholds_RetryBudget{
		BudgetPercent:       &typev3.Percent{Value: 20},
		MinRetryConcurrency: wrapperspb.UInt32(3),
	}
	if v := rb.GetPercent(); v != nil {
		if v.GetValue() < 0 || v.GetValue() > 100 {
			return nil // Envoy would reject the cluster (istiod sends it); validate warns
		}
		out.BudgetPercent = &typev3.Percent{Value: v.GetValue()}
	}
	if n := rb.GetMinRetryConcurrency(); n > 0 {
		out.MinRetryConcurrency = wrapperspb.UInt32(n)
	}
	if d := rb.GetBudgetInterval(); d != nil {
		out.BudgetInterval = durationpb.New(d.AsDuration())
	}
	return out
}

// localityWeighted reports whether the cluster needs Envoy's locality-weighted load balancing,
// as istiod sets it: the localities carry weights of their own (distribute), or failover is
// configured (failover or failoverPriority, with outlier detection or forced by the service's
// traffic distribution).
func (p policy) localityWeighted() bool {
	set, forced, on := p.locality()
	if !on || set == nil {
		return false
	}
	return len(set.GetDistribute()) > 0 || ((forced || p.outlier != nil) && (len(set.GetFailover()) > 0 || len(set.GetFailoverPriority()) > 0))
}

// applyOutlier maps Istio's outlier detection to Envoy's.
func (p policy) applyOutlier(c *clusterv3.Cluster) {
	od := p.outlier
	if od == nil {
		return
	}
	out := &clusterv3.OutlierDetection{
		// Istio enforces only what the user configured: 5xx and gateway errors at 100 % (0 %
		// when their threshold is 0), success-rate ejection off.
		EnforcingSuccessRate: wrapperspb.UInt32(0),
	}
	enforce := func(v uint32) *wrapperspb.UInt32Value { return wrapperspb.UInt32(min(v, 1) * 100) }
	if v := od.GetConsecutive_5XxErrors(); v != nil {
		out.Consecutive_5Xx = wrapperspb.UInt32(v.GetValue())
		out.EnforcingConsecutive_5Xx = enforce(v.GetValue())
	}
	if gw := od.GetConsecutiveGatewayErrors(); gw != nil {
		out.ConsecutiveGatewayFailure = wrapperspb.UInt32(gw.GetValue())
		out.EnforcingConsecutiveGatewayFailure = enforce(gw.GetValue())
	}
	if d := od.GetInterval(); d != nil {
		out.Interval = durationpb.New(d.AsDuration())
	}
	if d := od.GetBaseEjectionTime(); d != nil {
		out.BaseEjectionTime = durationpb.New(d.AsDuration())
	}
	if v := od.GetMaxEjectionPercent(); v > 0 {
		out.MaxEjectionPercent = wrapperspb.UInt32(uint32(min(v, 100)))
	}
	if od.GetSplitExternalLocalOriginErrors() {
		out.SplitExternalLocalOriginErrors = true
		if v := od.GetConsecutiveLocalOriginFailures().GetValue(); v > 0 {
			out.ConsecutiveLocalOriginFailure = wrapperspb.UInt32(v)
			out.EnforcingConsecutiveLocalOriginFailure = wrapperspb.UInt32(100)
		}
		out.EnforcingLocalOriginSuccessRate = wrapperspb.UInt32(0)
	}
	c.OutlierDetection = out
	if v := od.GetMinHealthPercent(); v >= 0 {
		if p.distribution != model.TrafficDistributionAny {
			// istiod sends such a service's unhealthy endpoints (to see when to leave a
			// zone): a panic threshold would send traffic to them.
			v = 0
		}
		c.CommonLbConfig = &clusterv3.Cluster_CommonLbConfig{HealthyPanicThreshold: &typev3.Percent{Value: float64(min(v, 100))}}
	}
}
