package scenarios

import (
	"math"
	"time"

	"github.com/xdslab/xdslab/internal/dist"
	"github.com/xdslab/xdslab/scenarios/threshold"
	"github.com/xdslab/xdslab/scenarios/units"
)

// The struct tags below are the single source of the schema: `yaml` names the key (json uses
// the same), `doc` is the meaning shown in docs/scenarios.md and the JSON Schema, `def`
// overrides the default column where Defaults() cannot show it (kind-specific defaults),
// `kinds` lists the churn kinds a churn field applies to, and `enum`, `range` and `pattern`
// constrain values in the JSON Schema (Validate enforces the same rules).

// Scenario is one benchmark: a synthetic mesh, its churn, a fleet of clients and the
// pass/fail thresholds. Offsets (churn at/start/stop) count from the start of the measure phase.
type Scenario struct {
	Name         string                           `yaml:"name" json:"name" pattern:"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$" doc:"Required. Lower-case letters, digits and '-', at most 63 characters; names the run and its outputs."`
	Description  string                           `yaml:"description" json:"description" doc:"Free text shown in reports."`
	Seed         uint64                           `yaml:"seed" json:"seed" doc:"Seeds every random choice (topology, churn, client behaviour): the same seed gives the same run."`
	Duration     units.Duration                   `yaml:"duration" json:"duration" doc:"Length of the measure phase, during which churn runs and observations are recorded."`
	ControlPlane ControlPlane                     `yaml:"controlPlane" json:"controlPlane" doc:"Settings of the in-process control plane (ignored with --target)."`
	Sink         Sink                             `yaml:"sink" json:"sink" doc:"Where the simulator writes the mesh and its churn when the run drives a control plane at --target."`
	Topology     Topology                         `yaml:"topology" json:"topology" doc:"The synthetic mesh the simulator builds before the run."`
	Churn        []Churn                          `yaml:"churn" json:"churn" doc:"Churn processes, each an open-model arrival process running during the measure phase."`
	Clients      []Client                         `yaml:"clients" json:"clients" doc:"Client groups of the fake Envoy fleet; at least one."`
	Phases       Phases                           `yaml:"phases" json:"phases" doc:"Timeouts of the connect and drain phases."`
	Thresholds   map[string][]threshold.Threshold `yaml:"thresholds" json:"thresholds" doc:"Pass/fail criteria in k6 syntax: metric name (optionally with {tag:value}) to a list of expressions."`

	// src is where the scenario came from and where each field was written; unexported so it is
	// neither printed nor embedded in summaries.
	src *source
	// setKeys are the client fields a bootstrap profile governs that Set wrote
	// ("clients[0].listenerDrain"): like the file's, a later profile leaves them as written.
	setKeys map[string]bool
}

// ControlPlane tunes the in-process control plane.
type ControlPlane struct {
	Debounce      Debounce    `yaml:"debounce" json:"debounce" doc:"How changes are batched into pushes."`
	PushThrottle  int         `yaml:"pushThrottle" json:"pushThrottle" doc:"Maximum concurrent pushes; 0 picks a default from the core count."`
	FlowControl   FlowControl `yaml:"flowControl" json:"flowControl" doc:"ACK-gated flow control: a connection gets its next push only after the previous one is ACKed."`
	AdmissionRate units.Rate  `yaml:"admissionRate" json:"admissionRate" doc:"New ADS streams admitted per second; 0 picks the control plane's default."`
}

// Sink kinds.
const (
	// SinkDir writes Istio YAML into the directory given by --sink-dir.
	SinkDir = "dir"
	// SinkKube writes to a Kubernetes API server with client-go (the simulator's kube sink).
	SinkKube = "kube"
	// SinkMCP serves the mesh over MCP (Istio's MCP over xDS) on sink.listen.
	SinkMCP = "mcp"
)

// Sink chooses where a run against --target writes the simulated mesh. The in-process control
// plane is fed directly (its config store) for kind dir, and over MCP for kind mcp.
type Sink struct {
	Kind       string  `yaml:"kind" json:"kind" enum:"dir,kube,mcp" doc:"dir: Istio YAML in the directory --sink-dir names, which the target watches; kube: a Kubernetes API server the target reads (stock istiod; see docs/kubernetes.md), which needs --target; mcp: an MCP-over-xDS server on sink.listen that the control plane reads as its xds:// config source (the in-process one too; see docs/mcp.md). The flag --sink (or --sink-dir alone, for dir) overrides it."`
	Kubeconfig string  `yaml:"kubeconfig" json:"kubeconfig" doc:"Kind kube: the API server's kubeconfig file, relative to the scenario file; --kubeconfig overrides it." def:"$KUBECONFIG, then ~/.kube/config"`
	QPS        float64 `yaml:"qps" json:"qps" doc:"Kind kube: client-side limit of API requests per second (negative: none); --kube-qps overrides it."`
	Burst      int     `yaml:"burst" json:"burst" doc:"Kind kube: client-side burst of API requests (0: the qps, rounded up); --kube-burst overrides it."`
	Pods       bool    `yaml:"pods" json:"pods" doc:"Kind kube: write a Pod per endpoint (labels, service account, locality, Ready status; bound to a Node no kubelet runs) as a real cluster holds them, so that istiod sees endpoint labels and identities; --kube-pods overrides it."`
	Listen     string  `yaml:"listen" json:"listen" doc:"Kind mcp: the address the simulator's MCP server listens on (port 0 picks one; a --target control plane needs a fixed port in its --config-source xds://HOST:PORT)." def:"127.0.0.1:0"`
}

// Debounce configures the debouncer (Istio's PILOT_DEBOUNCE_AFTER, PILOT_DEBOUNCE_MAX,
// PILOT_ENABLE_EDS_DEBOUNCE).
type Debounce struct {
	MinQuiet  units.Duration   `yaml:"minQuiet" json:"minQuiet" doc:"Push once no change has arrived for this long; 0 disables debouncing."`
	MaxDelay  units.Duration   `yaml:"maxDelay" json:"maxDelay" doc:"Push at the latest this long after the first change of a batch; must be >= minQuiet."`
	Endpoints bool             `yaml:"endpoints" json:"endpoints" doc:"Debounce endpoint-only (EDS) changes too; false pushes them at once."`
	Policy    string           `yaml:"policy,omitempty" json:"policy,omitempty" enum:"fixed,adaptive" doc:"How the quiet window is chosen: fixed waits minQuiet for every batch; adaptive grows it with the recent push cost between minQuiet and adaptive.maxQuiet, and pushes a batch at the latest two windows after its first event (see docs/tuning.md)." def:"fixed"`
	Adaptive  AdaptiveDebounce `yaml:"adaptive,omitempty" json:"adaptive,omitzero" doc:"Parameters of the adaptive policy; a file that gives one with policy fixed is an error (xdslab tune may still sweep them beside policy=fixed, which ignores them)."`
}

// AdaptiveDebounce configures the adaptive debounce policy: the quiet window is costFactor ×
// the moving average of push durations, clamped to [minQuiet, maxQuiet].
type AdaptiveDebounce struct {
	MaxQuiet   units.Duration `yaml:"maxQuiet,omitempty" json:"maxQuiet,omitempty" doc:"The longest quiet window; at least minQuiet, at most maxDelay." def:"1s (capped at maxDelay)"`
	CostFactor float64        `yaml:"costFactor,omitempty" json:"costFactor,omitempty" doc:"Quiet window = costFactor × the moving average of push durations." def:"4"`
	Weight     float64        `yaml:"weight,omitempty" json:"weight,omitempty" range:"0,1" doc:"Weight (0..1] of the newest push in the moving average." def:"0.3"`
}

// FlowControl configures ACK-gated pushes.
type FlowControl struct {
	Enabled    bool           `yaml:"enabled" json:"enabled" doc:"Hold a connection's next push until it ACKs the previous one."`
	AckTimeout units.Duration `yaml:"ackTimeout" json:"ackTimeout" doc:"Stop waiting for an ACK after this long and push anyway; a file that changes it without enabled: true is an error."`
}

// Topology describes the synthetic mesh.
type Topology struct {
	Namespaces                  int                   `yaml:"namespaces" json:"namespaces" doc:"Namespaces the services are spread over (1..100000, the simulator's limit)."`
	Services                    int                   `yaml:"services" json:"services" doc:"Services at the start of the run (0..1000000, the simulator's limit)."`
	Protocols                   Protocols             `yaml:"protocols" json:"protocols" doc:"Protocol mix of service ports, as weights (normalised; a written mix replaces the default as a whole)."`
	PortsPerService             dist.Spec             `yaml:"portsPerService" json:"portsPerService" doc:"Ports per service (distribution, rounded, at least 1)."`
	EndpointsPerService         dist.Spec             `yaml:"endpointsPerService" json:"endpointsPerService" doc:"Endpoints per service (distribution, rounded)."`
	Localities                  Localities            `yaml:"localities" json:"localities" doc:"Regions and zones endpoints are placed in."`
	Versions                    int                   `yaml:"versions" json:"versions" doc:"Versions per service: endpoints carry label version=v1..vN (subsets)."`
	ServiceAccountsPerNamespace int                   `yaml:"serviceAccountsPerNamespace" json:"serviceAccountsPerNamespace" doc:"Service accounts per namespace, shared by its services."`
	VirtualServices             float64               `yaml:"virtualServices" json:"virtualServices" range:"0,1" doc:"Fraction (0..1) of services with a VirtualService (weighted split across versions, timeout)."`
	DestinationRules            float64               `yaml:"destinationRules" json:"destinationRules" range:"0,1" doc:"Fraction (0..1) of services with a DestinationRule (subsets, load balancer, outlier detection)."`
	SidecarScoping              bool                  `yaml:"sidecarScoping" json:"sidecarScoping" doc:"Add an Istio Sidecar per namespace whose egress imports the namespace itself and sidecarImports others; events then reach only the importing namespaces, and each client is held to the changed services it imports."`
	SidecarImports              int                   `yaml:"sidecarImports" json:"sidecarImports" doc:"Other namespaces each Sidecar imports (with sidecarScoping; a file that changes it without sidecarScoping is an error); more than the other namespaces imports them all."`
	WorkloadEntries             bool                  `yaml:"workloadEntries" json:"workloadEntries" doc:"Represent endpoints as one WorkloadEntry each (selected by the ServiceEntry) instead of inline ServiceEntry endpoints."`
	Gateways                    Gateways              `yaml:"gateways" json:"gateways" doc:"Ingress Gateways and the VirtualServices bound to them, served to router clients (clients[].type: router)."`
	AuthorizationPolicies       AuthorizationPolicies `yaml:"authorizationPolicies,omitempty" json:"authorizationPolicies,omitzero" doc:"Namespace-wide AuthorizationPolicies (security.istio.io) in every namespace, rendered by the control plane as RBAC filters on each sidecar's inbound listener; churn config-change with target authz rewrites them (docs/scenarios.md, AuthorizationPolicies)."`
	Mesh                        *Mesh                 `yaml:"mesh,omitempty" json:"mesh,omitempty" doc:"An explicit mesh (services, endpoint counts per locality, Istio objects verbatim) instead of the synthetic services, as xdslab import writes it; services and namespaces are then set from it (docs/scenarios.md, topology.mesh)." def:"none"`
}

// Gateways is the simulated ingress.
type Gateways struct {
	Count           int  `yaml:"count" json:"count" doc:"Gateways gw-0 … in namespace istio-system, each selecting routers labelled istio: ingressgateway, with an HTTP server on port 80 for *.gw-N.example.com."`
	HostsPerGateway int  `yaml:"hostsPerGateway" json:"hostsPerGateway" doc:"Hosts h-J.gw-N.example.com per gateway (with count >= 1), each a VirtualService bound to the gateway (in its backend's namespace) routing to a random service with an HTTP or gRPC port (its first such port). Backends are not deleted by service-delete. Routers hold only those clusters and route configuration http.80: an event reaches them when each of its predicates is about one of those (an endpoint change of a one-port backend reaches routers and sidecars; others reach sidecars only)."`
	TLSPassthrough  bool `yaml:"tlsPassthrough" json:"tlsPassthrough" doc:"Add a TLS PASSTHROUGH server on port 443 to each gateway (with count >= 1), and route each host's SNI to the same service port."`
}

// AuthorizationPolicies are the simulated AuthorizationPolicies. They select no workload: the
// fleet's clients carry their group's node labels, not a simulated workload's, so a policy with
// a selector would reach no client.
type AuthorizationPolicies struct {
	PerNamespace int     `yaml:"perNamespace" json:"perNamespace" doc:"Policies authz-0 … in each namespace (topology.mesh's too), each with 1 to 4 rules over principals, source namespaces, methods, paths and ports drawn from the seed; 0: none."`
	Allow        float64 `yaml:"allow" json:"allow" doc:"Weight of ALLOW policies, with perNamespace >= 1 (an ALLOW rule admits a principal or a namespace to some methods under a path)." def:"0.7 (when allow and deny are both 0)"`
	Deny         float64 `yaml:"deny" json:"deny" doc:"Weight of DENY policies, with perNamespace >= 1 (a DENY rule refuses other namespaces, or a principal, writes or an admin path on port 8080)." def:"0.3 (when allow and deny are both 0)"`
}

// Protocols are weights of the port protocol mix.
type Protocols struct {
	HTTP float64 `yaml:"http" json:"http" doc:"Weight of HTTP ports."`
	GRPC float64 `yaml:"grpc" json:"grpc" doc:"Weight of gRPC ports."`
	TCP  float64 `yaml:"tcp" json:"tcp" doc:"Weight of TCP ports."`
}

// Localities are the regions and zones of the mesh.
type Localities struct {
	Regions        int `yaml:"regions" json:"regions" doc:"Regions endpoints are placed in."`
	ZonesPerRegion int `yaml:"zonesPerRegion" json:"zonesPerRegion" doc:"Zones per region."`
}

// The churn kinds.
const (
	KindEndpointFlap         = "endpoint-flap"
	KindScale                = "scale"
	KindRollingDeploy        = "rolling-deploy"
	KindServiceCreate        = "service-create"
	KindServiceDelete        = "service-delete"
	KindConfigChange         = "config-change"
	KindServiceAccountChange = "service-account-change"
	KindZoneFailure          = "zone-failure"
	KindReplay               = "replay"
)

// ChurnKinds returns the churn kinds in documentation order.
func ChurnKinds() []string {
	return []string{KindEndpointFlap, KindScale, KindRollingDeploy, KindServiceCreate,
		KindServiceDelete, KindConfigChange, KindServiceAccountChange, KindZoneFailure, KindReplay}
}

// Config-change targets.
const (
	TargetVirtualService  = "virtualservice"
	TargetDestinationRule = "destinationrule"
	TargetGateway         = "gateway"
	TargetAuthz           = "authz"
)

// Churn is one churn process. Its timing is exactly one of Rate (Poisson arrivals), Every
// (fixed period) or At (fixed offsets); replay takes its timing from the trace. Offsets count
// from the start of the measure phase.
type Churn struct {
	Kind     string           `yaml:"kind" json:"kind" enum:"endpoint-flap,scale,rolling-deploy,service-create,service-delete,config-change,service-account-change,zone-failure,replay" doc:"What changes: endpoint-flap, scale, rolling-deploy, service-create, service-delete, config-change, service-account-change, zone-failure, replay." kinds:"all" def:"required"`
	Rate     units.Rate       `yaml:"rate,omitempty" json:"rate,omitempty" doc:"Poisson arrivals at this mean rate (\"20/s\", \"5/m\")." kinds:"all but replay" def:"—"`
	Every    units.Duration   `yaml:"every,omitempty" json:"every,omitempty" doc:"One event every period, the first one period after start." kinds:"all but replay" def:"—"`
	At       []units.Duration `yaml:"at,omitempty" json:"at,omitempty" doc:"One event at each offset." kinds:"all but replay" def:"—"`
	Start    units.Duration   `yaml:"start,omitempty" json:"start,omitempty" doc:"The process starts this long into the measure phase." kinds:"all" def:"0s"`
	Stop     units.Duration   `yaml:"stop,omitempty" json:"stop,omitempty" doc:"The process stops this long into the measure phase; 0 runs to the end." kinds:"all" def:"0s (end)"`
	Delta    *dist.Spec       `yaml:"delta,omitempty" json:"delta,omitempty" doc:"Endpoints added or removed per event (up or down at random)." kinds:"scale" def:"{dist: uniform, min: 1, max: 3}"`
	Services int              `yaml:"services,omitempty" json:"services,omitempty" doc:"Services one event touches, 1..100000 (a rolling deploy replaces every endpoint of each); for config-change target authz, the AuthorizationPolicies one event rewrites. A written 0 is an error, not the default." kinds:"scale, rolling-deploy, service-create, service-delete, config-change, service-account-change" def:"1"`
	Window   units.Duration   `yaml:"window,omitempty" json:"window,omitempty" doc:"Each service's rollout is spread over this window (> 0; a written 0 is an error, not the default)." kinds:"rolling-deploy" def:"10s"`
	Target   string           `yaml:"target,omitempty" json:"target,omitempty" enum:"virtualservice,destinationrule,gateway,authz" doc:"The config changed: virtualservice (route weights, timeout), destinationrule (lb policy, outlier detection), gateway (rotates the backend services of Services gateway hosts, at least 2, so routers keep the same clusters; reaches router clients only; needs topology.gateways) or authz (rewrites the rules of services AuthorizationPolicies, each to a new number of rules; reaches the sidecars of their namespaces only; needs topology.authorizationPolicies)." kinds:"config-change" def:"virtualservice"`
	Down     units.Duration   `yaml:"down,omitempty" json:"down,omitempty" doc:"How long a flapped endpoint stays away (> 0; a written 0 is an error, not the default); for a zone failure, how long the zone stays down (0: it does not come back)." kinds:"endpoint-flap, zone-failure" def:"1s (endpoint-flap), 0s (zone-failure)"`
	Fraction float64          `yaml:"fraction,omitempty" json:"fraction,omitempty" range:"0,1" doc:"Fraction (0..1] of one zone's endpoints removed at once; a written 0 is an error, not the default." kinds:"zone-failure" def:"0.5"`
	File     string           `yaml:"file,omitempty" json:"file,omitempty" doc:"Event trace (JSON lines, the simulator's event-log format) to replay; relative to the scenario file." kinds:"replay" def:"required"`
}

// Client xDS protocol variants.
const (
	XDSSotW  = "sotw"
	XDSDelta = "delta"
	// XDSGRPC is a proxyless gRPC client: grpc-go's xDS client (SotW, named subscriptions
	// from API listeners down to EDS, grpc-go's validation rules).
	XDSGRPC = "grpc"
)

// Client types.
const (
	TypeSidecar = "sidecar"
	TypeRouter  = "router"
	TypeGRPC    = "grpc"
)

// Client is a group of identical fake clients.
type Client struct {
	Name                 string         `yaml:"name" json:"name" pattern:"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$" doc:"Group name, unique, [a-z0-9-]; labels the group's metrics." def:"group-N (N = position from 1)"`
	Count                int            `yaml:"count" json:"count" range:"1,1000000" doc:"Clients in the group (1..1000000; all groups together at most 1000000, the lab's limit)."`
	XDS                  string         `yaml:"xds" json:"xds" enum:"sotw,delta,grpc" doc:"Protocol variant: sotw (state of the world), delta (incremental), or grpc (a proxyless gRPC client as grpc-go's xDS client behaves: API listeners host:port, then RDS, CDS, EDS by name; NACKs what grpc-go rejects; node metadata GENERATOR=grpc)."`
	Type                 string         `yaml:"type" json:"type" enum:"sidecar,router,grpc" doc:"Proxy type: sidecar, router (gateway), or grpc (proxyless gRPC, node metadata GENERATOR=grpc). Router goes with xds sotw or delta, grpc with xds grpc (xds grpc alone makes a sidecar-typed gRPC client); other pairs are an error."`
	Ramp                 units.Rate     `yaml:"ramp" json:"ramp" doc:"Connect clients at this rate during the connect phase; 0 connects all at once."`
	Namespaces           int            `yaml:"namespaces" json:"namespaces" doc:"Spread clients over the first N namespaces of the topology; 0 spreads over all."`
	NamespaceCounts      map[string]int `yaml:"namespaceCounts,omitempty" json:"namespaceCounts,omitempty" doc:"Place the clients by namespace instead: NAME: COUNT for each namespace of the topology (its ns-N, or topology.mesh's namespaces), taken in name order; the counts add up to count. xdslab import writes it from the dump's pods." def:"{}"`
	AckDelay             units.TimeDist `yaml:"ackDelay" json:"ackDelay" doc:"Time from receiving a response to sending its ACK or NACK (Envoy's apply time); a time distribution."`
	Nack                 Nack           `yaml:"nack" json:"nack" doc:"When clients reject a response (policies combine: any one NACKs)."`
	NeverAck             bool           `yaml:"neverAck" json:"neverAck" doc:"Never ACK or NACK (a hung client)."`
	DisconnectAfter      int            `yaml:"disconnectAfter" json:"disconnectAfter" doc:"Close the stream after this many responses, then reconnect; 0 never."`
	Bootstrap            string         `yaml:"bootstrap" json:"bootstrap" enum:"istio,envoy" doc:"The Envoy bootstrap the group's clients run with, which sets nodeOnFirstOnly, initialFetchTimeout and listenerDrain (a field written beside it wins): istio is istio-agent's Envoy (Istio's bootstrap template sets set_node_on_first_message_only: true and initial_fetch_timeout: 0s on its CDS and LDS; the agent passes --drain-time-s 45s), envoy is Envoy's own defaults (the node on every request, 15s, 600s). It also picks the connection to the control plane: istio is istio-agent's gRPC connection (1 MiB HTTP/2 windows, a quarter given back at a time, a 30s keepalive; proxyless gRPC clients reach istiod through the agent too), envoy Envoy's (256 MiB, half, none). xds grpc clients follow grpc-go instead for the node (on a stream's first request) and drain (none)."`
	NodeOnFirstOnly      bool           `yaml:"nodeOnFirstOnly" json:"nodeOnFirstOnly" doc:"Send the node only on a stream's first request (Envoy's set_node_on_first_message_only)." def:"true (bootstrap istio), false (envoy)"`
	InitialFetchTimeout  units.Duration `yaml:"initialFetchTimeout" json:"initialFetchTimeout" doc:"Envoy's initial_fetch_timeout of the bootstrap CDS and LDS: how long the first CDS and LDS responses are waited for. 0 waits forever. The config sources the control plane sends keep their own (Istio's eds_config and RDS config_source say 0s); one that gives none (as Istio leaves a credentialName secret's sds_config) takes Envoy's 15s whatever the bootstrap." def:"0s (bootstrap istio), 15s (envoy)"`
	ListenerDrain        units.Duration `yaml:"listenerDrain" json:"listenerDrain" def:"45s (bootstrap istio), 600s (envoy)" doc:"Envoy's --drain-time-s (istio-agent passes proxyConfig drainDuration, 45s by default): a listener an LDS update removes or replaces drains this long, and its route configurations and its SDS secrets on ADS (a gateway's credentialName secrets) stay subscribed (asked for, applied, ACKed) until it is gone; 0 unsubscribes them at once. Proxyless gRPC clients do not drain."`
	Churn                Reconn         `yaml:"churn" json:"churn" doc:"Connection churn: each client reconnects periodically."`
	StreamsPerConnection int            `yaml:"streamsPerConnection" json:"streamsPerConnection" range:"1," doc:"ADS streams per gRPC connection: 1 gives each client its own HTTP/2 connection, as Envoy; N > 1 makes each N consecutive clients of the group share one (pilot-load style: one server-side connection and one connection's HTTP/2 flow control for N streams), which changes the workload (docs/scenarios.md, Connection layout). Groups never share a connection; not with auth."`
	Agent                Agent          `yaml:"agent" json:"agent" doc:"The emulated istio-agent next to each client: it serves the SDS secrets whose sds_config is the agent's bootstrap cluster sds-grpc (istiod's auto-mTLS default and ROOTCA) from a lab CA, without network traffic; secrets on ADS are asked of the control plane (docs/security.md)."`
	Node                 Node           `yaml:"node" json:"node" doc:"Identity template of the group's nodes (Istio node metadata)."`
	Targets              []string       `yaml:"targets,omitempty" json:"targets,omitempty" doc:"xds grpc: the API listeners each client asks for, host:port (the services it calls)." def:"every service port of the initial topology"`
	Auth                 Auth           `yaml:"auth" json:"auth" doc:"Authenticate each client to a secure ADS listener (mTLS or JWT) with a credential for its own namespace; in-process runs then start the control plane's secure listener and the group dials it."`
	RequireFullConfig    bool           `yaml:"requireFullConfig" json:"requireFullConfig" doc:"The implicit threshold xdslab_connect_incomplete_clients{group:NAME} value==0: every client of the group holds its first full config when the connect phase ends (phases.connect.timeout), or the run fails (exit 99). false drops it, for groups not meant to get there (clients that NACK their initial config); a threshold written on that metric still applies."`
}

// Agent is the emulated istio-agent of a client group.
type Agent struct {
	IssueDelay units.Duration `yaml:"issueDelay" json:"issueDelay" doc:"How long the agent takes to serve a client's first request for a secret (the real agent signs a CSR with istiod's CA); applies to default and ROOTCA; 0 serves at once."`
}

// Auth is a client group's credentials for a secure ADS listener (docs/security.md).
type Auth struct {
	MTLS       bool   `yaml:"mtls" json:"mtls" doc:"Present a workload certificate (SPIFFE id spiffe://cluster.local/ns/NS/sa/default) issued per namespace from caDir's root."`
	JWT        bool   `yaml:"jwt" json:"jwt" doc:"Present a bearer JWT per namespace (subject system:serviceaccount:NS:default), signed with jwtKey."`
	CADir      string `yaml:"caDir" json:"caDir" doc:"Directory of the root CA: ca.pem verifies the server; with mtls, ca-key.pem signs the client certificates. Required with --target; in-process the run's own CA directory is used when empty."`
	JWTKey     string `yaml:"jwtKey" json:"jwtKey" doc:"jwt: PEM PKCS#8 private key (ECDSA P-256 or RSA) that signs the tokens; in-process its public key is the control plane's JWKS."`
	Issuer     string `yaml:"issuer" json:"issuer" doc:"jwt: the tokens' iss claim (the control plane's --jwt-issuer)."`
	Audience   string `yaml:"audience" json:"audience" doc:"jwt: the tokens' aud claim (the control plane's --jwt-audience)."`
	ServerName string `yaml:"serverName" json:"serverName" doc:"Name the server certificate must carry." def:"localhost"`
}

// Enabled reports whether the group authenticates.
func (a Auth) Enabled() bool { return a.MTLS || a.JWT }

// Node is the identity template of a client group: Istio-style node id
// (TYPE~IP~pod.NS~NS.svc.cluster.local) and metadata. NAMESPACE comes from the client's
// namespace, GENERATOR from type grpc.
type Node struct {
	ClusterID     string            `yaml:"clusterID" json:"clusterID" doc:"Metadata CLUSTER_ID."`
	IstioVersion  string            `yaml:"istioVersion" json:"istioVersion" doc:"Metadata ISTIO_VERSION."`
	Labels        map[string]string `yaml:"labels,omitempty" json:"labels,omitempty" doc:"Metadata LABELS (workload labels), added to every client of the group. A router group without an istio label gets istio: ingressgateway, which the simulated Gateways select." def:"{}"`
	IstioMetadata bool              `yaml:"istioMetadata,omitempty" json:"istioMetadata,omitempty" doc:"Send an Istio-sized node (about 5 KB: istio-agent's PROXY_CONFIG, ANNOTATIONS, POD_PORTS, OWNER, Envoy's extensions and client features) instead of the basic metadata; bootstrap istio (the default) sends it on a stream's first request only, as Istio's bootstrap does."`
}

// Nack is a client group's NACK policy.
type Nack struct {
	Probability float64 `yaml:"probability" json:"probability" range:"0,1" doc:"NACK each response with this probability (0..1)."`
	EveryN      int     `yaml:"everyN" json:"everyN" doc:"NACK every Nth response; 0 never."`
	Pattern     string  `yaml:"pattern" json:"pattern" doc:"NACK a response holding a resource whose name matches this regular expression (RE2); empty never."`
	Realistic   bool    `yaml:"realistic" json:"realistic" doc:"NACK what Envoy rejects: validation failures (also inside typed_config), duplicate names, a Delta resource both added and removed."`
}

// Reconn is connection churn.
type Reconn struct {
	Every  units.Duration `yaml:"every" json:"every" doc:"Reconnect each client of this group every period (a restarted pod: a new process, a new stream); 0 never. Groups churn independently."`
	Jitter float64        `yaml:"jitter" json:"jitter" range:"0,1" doc:"Spread each period uniformly by ± this fraction (0..1); a file that changes it without every is an error."`
}

// Phases holds the timeouts of the phases around the measure phase.
type Phases struct {
	Connect Phase `yaml:"connect" json:"connect" doc:"Ramp the clients and wait until each holds its first full config."`
	Drain   Phase `yaml:"drain" json:"drain" doc:"After churn stops, wait for in-flight events to converge; unconverged events are counted."`
}

// Phase is one phase's settings.
type Phase struct {
	Timeout units.Duration `yaml:"timeout" json:"timeout" doc:"Give up on the phase after this long; what is still pending is counted."`
}

// Defaults returns a scenario with every field at its default. Name is empty (required) and
// there are no churn processes; there is one client group.
func Defaults() *Scenario {
	return &Scenario{
		Seed:     1,
		Duration: units.Duration(30 * time.Second),
		ControlPlane: ControlPlane{
			Debounce: Debounce{
				MinQuiet:  units.Duration(100 * time.Millisecond),
				MaxDelay:  units.Duration(10 * time.Second),
				Endpoints: true,
			},
			FlowControl: FlowControl{AckTimeout: units.Duration(5 * time.Second)},
		},
		Sink: Sink{Kind: SinkDir, QPS: 50, Burst: 100, Listen: "127.0.0.1:0"},
		Topology: Topology{
			Namespaces:                  5,
			Services:                    100,
			Protocols:                   Protocols{HTTP: 0.6, GRPC: 0.3, TCP: 0.1},
			PortsPerService:             dist.Constant(1),
			EndpointsPerService:         dist.Spec{Dist: "lognormal", Median: 3, Sigma: 0.5},
			Localities:                  Localities{Regions: 1, ZonesPerRegion: 3},
			Versions:                    2,
			ServiceAccountsPerNamespace: 3,
			VirtualServices:             0.2,
			DestinationRules:            0.3,
			SidecarImports:              2,
		},
		Churn:   []Churn{},
		Clients: []Client{DefaultClient()},
		Phases: Phases{
			Connect: Phase{Timeout: units.Duration(60 * time.Second)},
			Drain:   Phase{Timeout: units.Duration(10 * time.Second)},
		},
		Thresholds: map[string][]threshold.Threshold{},
	}
}

// DefaultClient returns a client group with every field at its default; the loader starts
// each written group from it. Its name is set by Complete when left empty.
func DefaultClient() Client {
	return Client{
		Count:                100,
		XDS:                  XDSSotW,
		Type:                 TypeSidecar,
		Ramp:                 200,
		AckDelay:             units.TimeDist(dist.Constant(0)),
		Bootstrap:            BootstrapIstio,
		NodeOnFirstOnly:      true,                             // BootstrapIstio's
		InitialFetchTimeout:  0,                                // BootstrapIstio's: forever
		ListenerDrain:        units.Duration(45 * time.Second), // BootstrapIstio's
		Churn:                Reconn{Jitter: 0.2},
		StreamsPerConnection: 1,
		Agent:                Agent{IssueDelay: units.Duration(5 * time.Millisecond)},
		Node:                 Node{ClusterID: "Kubernetes", IstioVersion: "1.28.0"},
		RequireFullConfig:    true,
	}
}

// Complete fills the defaults that depend on other fields: kind-specific churn defaults (a zero
// value there is not meaningful), client group names, normalised protocol weights, and parsed
// thresholds. The loader calls it; call it after building a Scenario in Go. It is idempotent.
func (s *Scenario) Complete() {
	for i := range s.Churn {
		c := &s.Churn[i]
		if c.Services == 0 && takesServices(c.Kind) {
			c.Services = 1
		}
		switch c.Kind {
		case KindScale:
			if c.Delta == nil {
				c.Delta = &dist.Spec{Dist: "uniform", Min: 1, Max: 3}
			}
		case KindEndpointFlap:
			if c.Down == 0 {
				c.Down = units.Duration(time.Second)
			}
		case KindRollingDeploy:
			if c.Window == 0 {
				c.Window = units.Duration(10 * time.Second)
			}
		case KindConfigChange:
			if c.Target == "" {
				c.Target = TargetVirtualService
			}
		case KindZoneFailure:
			if c.Fraction == 0 {
				c.Fraction = 0.5
			}
		}
	}
	for i := range s.Clients {
		if s.Clients[i].Name == "" {
			s.Clients[i].Name = "group-" + itoa(i+1)
		}
		if len(s.Clients[i].Node.Labels) == 0 {
			s.Clients[i].Node.Labels = nil // {} and absent are the same
		}
	}
	s.Topology.completeMesh()
	if a := &s.Topology.AuthorizationPolicies; a.PerNamespace > 0 && a.Allow == 0 && a.Deny == 0 {
		a.Allow, a.Deny = 0.7, 0.3
	}
	p := &s.Topology.Protocols
	// Weights already summing to 1 (within rounding) are left alone, which keeps Complete
	// idempotent and a printed scenario reloading to the same values.
	if sum := p.HTTP + p.GRPC + p.TCP; sum > 0 && math.Abs(sum-1) > 1e-9 && p.HTTP >= 0 && p.GRPC >= 0 && p.TCP >= 0 {
		p.HTTP, p.GRPC, p.TCP = p.HTTP/sum, p.GRPC/sum, p.TCP/sum
	}
	if s.Thresholds == nil {
		s.Thresholds = map[string][]threshold.Threshold{}
	}
	// Thresholds built in Go as threshold.Threshold{Source: "..."} are parsed here; a bad one is
	// left for Validate to report.
	for _, ths := range s.Thresholds {
		for i, th := range ths {
			if th.Op == "" {
				if parsed, err := threshold.Parse(th.Source); err == nil {
					ths[i] = parsed
				}
			}
		}
	}
	if s.Churn == nil {
		s.Churn = []Churn{}
	}
}

// takesServices reports whether a churn kind touches a number of services per event.
func takesServices(kind string) bool {
	switch kind {
	case KindScale, KindRollingDeploy, KindServiceCreate, KindServiceDelete, KindConfigChange, KindServiceAccountChange:
		return true
	}
	return false
}

// Connections is the number of gRPC connections the fleet opens: one per client, or one per
// streamsPerConnection clients of a group.
func (s *Scenario) Connections() int {
	n := 0
	for _, c := range s.Clients {
		spc := max(c.StreamsPerConnection, 1)
		n += (c.Count + spc - 1) / spc
	}
	return n
}

// TotalClients is the number of clients over all groups.
func (s *Scenario) TotalClients() int {
	n := 0
	for _, c := range s.Clients {
		n += c.Count
	}
	return n
}

// Source returns the file the scenario was loaded from ("builtin:NAME" for a built-in, the
// name given to LoadBytes otherwise; empty when built in Go).
func (s *Scenario) Source() string {
	if s.src == nil {
		return ""
	}
	return s.src.file
}
