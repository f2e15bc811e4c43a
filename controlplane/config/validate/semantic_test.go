package validate_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/controlplane/config/validate"
	"github.com/xdslab/xdslab/internal/golden"
	"github.com/xdslab/xdslab/istioconfig"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"
	securityapi "istio.io/api/security/v1beta1"
	typeapi "istio.io/api/type/v1beta1"
)

// TestValidateSpec has one case per rule (and a valid case beside each): the spec YAML of a
// kind, and the path and message start of the error (or warning) istiod's validation gives for
// it. The istiod function each rule mirrors is named in semantic.go.
func TestValidateSpec(t *testing.T) {
	tests := []struct {
		name string
		kind istioconfig.Kind
		spec string
		// err is "path: message prefix" of the one expected error; "" means valid.
		err string
		// warn is the same for the one expected warning.
		warn string
	}{
		// PeerAuthentication (ValidatePeerAuthentication) and DestinationRule tls (validateTLS)
		{name: "pa ok", kind: istioconfig.KindPeerAuthentication, spec: "mtls: {mode: STRICT}"},
		{name: "pa workload ports ok", kind: istioconfig.KindPeerAuthentication, spec: "selector: {matchLabels: {app: a}}\nportLevelMtls: {8080: {mode: DISABLE}}"},
		{name: "pa ports without selector", kind: istioconfig.KindPeerAuthentication, spec: "portLevelMtls: {8080: {mode: DISABLE}}", err: "spec.portLevelMtls: a mesh- or namespace-wide PeerAuthentication"},
		{name: "pa port 0", kind: istioconfig.KindPeerAuthentication, spec: "selector: {matchLabels: {app: a}}\nportLevelMtls: {0: {mode: DISABLE}}", err: "spec.portLevelMtls.0: port 0 is not in 1..65535"},
		{name: "pa wildcard selector", kind: istioconfig.KindPeerAuthentication, spec: "selector: {matchLabels: {app: '*'}}", err: "spec.selector.matchLabels.app: wildcards are not supported"},
		{name: "dr istio mutual ok", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {tls: {mode: ISTIO_MUTUAL}}"},
		// connection pool (validateConnectionPool)
		{name: "dr pool timeouts ok", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {connectionPool: {tcp: {idleTimeout: 0s, maxConnectionDuration: 1h}, http: {maxConcurrentStreams: 10, http2KeepAlive: {interval: 30s, timeout: 5s}}}}"},
		{name: "dr keepalive without timeout", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {connectionPool: {http: {http2KeepAlive: {interval: 30s}}}}", err: "spec.trafficPolicy.connectionPool.http.http2KeepAlive.timeout: is required"},
		{name: "dr tcp idle timeout too short", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {connectionPool: {tcp: {idleTimeout: 100us}}}", err: "spec.trafficPolicy.connectionPool.tcp.idleTimeout: 100µs is too short"},
		{name: "dr upgrade with client protocol", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {connectionPool: {http: {h2UpgradePolicy: UPGRADE, useClientProtocol: true}}}", err: "spec.trafficPolicy.connectionPool.http.useClientProtocol: cannot be true with h2UpgradePolicy UPGRADE"},
		// localityLbSetting (ValidateLocalityLbSetting)
		{name: "dr locality lb ok", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {outlierDetection: {consecutive5xxErrors: 3}, loadBalancer: {localityLbSetting: {failover: [{from: r1, to: r2}], failoverPriority: [app]}}}"},
		{name: "dr locality distribute ok", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {loadBalancer: {localityLbSetting: {distribute: [{from: r1/z1/*, to: {r1/z1/*: 80, r2/*: 20}}, {from: r2/*, to: {'*': 100}}]}}}"},
		{name: "dr locality distribute and failover", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {loadBalancer: {localityLbSetting: {distribute: [{from: r1, to: {r1: 100}}], failover: [{from: r1, to: r2}]}}}", err: "spec.trafficPolicy.loadBalancer.localityLbSetting: sets both distribute and failover"},
		{name: "dr locality failover with region priority", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {outlierDetection: {}, loadBalancer: {localityLbSetting: {failover: [{from: r1, to: r2}], failoverPriority: [app, topology.kubernetes.io/region]}}}", err: "spec.trafficPolicy.loadBalancer.localityLbSetting.failoverPriority[1]: \"topology.kubernetes.io/region\" cannot be combined with failover"},
		{name: "dr locality weights not 100", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {loadBalancer: {localityLbSetting: {distribute: [{from: r1, to: {r1: 60, r2: 30}}]}}}", err: "spec.trafficPolicy.loadBalancer.localityLbSetting.distribute[0].to: weights add up to 90"},
		{name: "dr locality weight 0", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {loadBalancer: {localityLbSetting: {distribute: [{from: r1, to: {r1: 0, r2: 100}}]}}}", err: "spec.trafficPolicy.loadBalancer.localityLbSetting.distribute[0].to.r1: weight 0 is out of range"},
		{name: "dr locality overlapping to", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {loadBalancer: {localityLbSetting: {distribute: [{from: r1, to: {r1/*: 50, r1/z1: 50}}]}}}", err: "spec.trafficPolicy.loadBalancer.localityLbSetting.distribute[0].to: locality \"r1/z1\" overlaps"},
		{name: "dr locality overlapping from", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {loadBalancer: {localityLbSetting: {distribute: [{from: '*', to: {r1: 100}}, {from: r2, to: {r1: 100}}]}}}", err: "spec.trafficPolicy.loadBalancer.localityLbSetting.distribute: from: locality \"r2\" overlaps"},
		{name: "dr locality bad wildcard", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {loadBalancer: {localityLbSetting: {distribute: [{from: '*/z1', to: {r1: 100}}]}}}", err: "spec.trafficPolicy.loadBalancer.localityLbSetting.distribute: from: locality \"*/z1\": use at most one '*'"},
		{name: "dr locality empty zone", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {loadBalancer: {localityLbSetting: {distribute: [{from: r1//s1, to: {r1: 100}}]}}}", err: "spec.trafficPolicy.loadBalancer.localityLbSetting.distribute: from: locality \"r1//s1\" has an empty"},
		{name: "dr locality failover same region", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {outlierDetection: {}, loadBalancer: {localityLbSetting: {failover: [{from: r1, to: r1}]}}}", err: "spec.trafficPolicy.loadBalancer.localityLbSetting.failover[0]: from and to are both"},
		{name: "dr locality failover zone", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {outlierDetection: {}, loadBalancer: {localityLbSetting: {failover: [{from: r1/z1, to: r2}]}}}", err: "spec.trafficPolicy.loadBalancer.localityLbSetting.failover[0]: names a zone"},
		{name: "dr locality failover wildcard", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {outlierDetection: {}, loadBalancer: {localityLbSetting: {failover: [{from: r1, to: '*'}]}}}", err: "spec.trafficPolicy.loadBalancer.localityLbSetting.failover[0]: uses a '*' wildcard"},
		{name: "dr locality failover without outlier", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {portLevelSettings: [{port: {number: 80}, loadBalancer: {localityLbSetting: {failoverPriority: [app]}}}]}", warn: "spec.trafficPolicy.portLevelSettings[0].loadBalancer.localityLbSetting: fails over only with outlier detection"},
		{name: "dr locality hostname priority", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {outlierDetection: {}, loadBalancer: {localityLbSetting: {failoverPriority: [kubernetes.io/hostname]}}}", warn: "spec.trafficPolicy.loadBalancer.localityLbSetting.failoverPriority[0]: \"kubernetes.io/hostname\" is compared"},
		{name: "dr zone aware not generated", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {loadBalancer: {zoneAwareLbSetting: {}}}", warn: "spec.trafficPolicy.loadBalancer.zoneAwareLbSetting: is not generated by xdslab"},
		{name: "dr port keepalive generated", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {portLevelSettings: [{port: {number: 80}, connectionPool: {tcp: {tcpKeepalive: {time: 10s}}}}]}"},
		{name: "dr proxy protocol generated", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {proxyProtocol: {version: V2}}"},
		{name: "dr proxy protocol with tunnel", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {proxyProtocol: {version: V1}, tunnel: {targetHost: b.com, targetPort: 8080}}", err: "spec.trafficPolicy.proxyProtocol: cannot be set with tunnel"},
		{name: "dr retry budget generated", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {retryBudget: {percent: 25, minRetryConcurrency: 5}}"},
		{name: "dr retry budget beyond 100", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {retryBudget: {percent: 250}}", warn: "spec.trafficPolicy.retryBudget.percent: 250 is not a percentage"},
		{name: "dr credentialName not generated", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {tls: {mode: SIMPLE, credentialName: c}}", warn: "spec.trafficPolicy.tls.credentialName: is not generated by xdslab"},
		{name: "dr skip verify with ca", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {tls: {mode: SIMPLE, caCertificates: /ca.pem, insecureSkipVerify: true}}", err: "spec.trafficPolicy.tls.insecureSkipVerify: cannot be true with caCertificates, credentialName or subjectAltNames"},
		{name: "dr skip verify with sans", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {portLevelSettings: [{port: {number: 80}, tls: {mode: MUTUAL, clientCertificate: /c.pem, privateKey: /k.pem, subjectAltNames: [a], insecureSkipVerify: true}}]}", err: "spec.trafficPolicy.portLevelSettings[0].tls.insecureSkipVerify: cannot be true with caCertificates or subjectAltNames"},
		{name: "dr skip verify mutual credential ok", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {tls: {mode: MUTUAL, credentialName: c, insecureSkipVerify: true}}", warn: "spec.trafficPolicy.tls.credentialName: is not generated by xdslab"},
		{name: "dr skip verify alone ok", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {tls: {mode: SIMPLE, insecureSkipVerify: true}}"},
		{name: "dr credential with ca", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {tls: {mode: SIMPLE, credentialName: c, caCertificates: /ca.pem}}", err: "spec.trafficPolicy.tls.credentialName: holds the certificates"},
		{name: "dr istio mutual with cert", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {tls: {mode: ISTIO_MUTUAL, clientCertificate: /c.pem}}", err: "spec.trafficPolicy.tls: ISTIO_MUTUAL uses the mesh's certificates"},
		{name: "dr mutual without key", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {portLevelSettings: [{port: {number: 80}, tls: {mode: MUTUAL, clientCertificate: /c.pem}}]}", err: "spec.trafficPolicy.portLevelSettings[0].tls.privateKey: is required"},
		// ServiceEntry (ValidateServiceEntry)
		{name: "se ok", kind: istioconfig.KindServiceEntry, spec: "hosts: [api.example.com]\nports: [{number: 443, name: https, protocol: TLS}]\nresolution: DNS"},
		{name: "se no hosts", kind: istioconfig.KindServiceEntry, spec: "ports: [{number: 80, name: http}]", err: "spec.hosts: is required"},
		{name: "se host *", kind: istioconfig.KindServiceEntry, spec: "hosts: ['*']", err: `spec.hosts[0]: "*" is not allowed`},
		{name: "se wildcard prefix ok", kind: istioconfig.KindServiceEntry, spec: "hosts: ['*.example.com']"},
		{name: "se dash wildcard warns", kind: istioconfig.KindServiceEntry, spec: "hosts: ['*-foo.example.com']", warn: `spec.hosts[0]: "*-foo.example.com" is a partial wildcard`},
		{name: "se double dash wildcard", kind: istioconfig.KindServiceEntry, spec: "hosts: ['*--foo.example.com']", err: `spec.hosts[0]: "*--foo.example.com" is not a valid host`},
		{name: "se wildcard dot only ok", kind: istioconfig.KindServiceEntry, spec: "hosts: ['*.']"},
		{name: "se dash wildcard alone", kind: istioconfig.KindServiceEntry, spec: "hosts: ['*-.example.com']", err: `spec.hosts[0]: "*-.example.com" is not a valid host`},
		{name: "se wildcard label too long", kind: istioconfig.KindServiceEntry, spec: "hosts: ['*" + strings.Repeat("a", 63) + ".example.com']", err: `spec.hosts[0]: "*aaa`},
		{name: "dr ip host", kind: istioconfig.KindDestinationRule, spec: "host: 10.1.2.3", err: `spec.host: "10.1.2.3" is not a valid host: its last label "3" is all digits`},
		{name: "se trailing dot ok", kind: istioconfig.KindServiceEntry, spec: "hosts: [api.example.com.]"},
		{name: "se numeric top label", kind: istioconfig.KindServiceEntry, spec: "hosts: [api.example.123]", err: `spec.hosts[0]: "api.example.123" is not a valid host: its last label "123" is all digits`},
		{name: "vs destination ip", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: 10.1.2.3}}]}]", err: `spec.http[0].route[0].destination.host: "10.1.2.3" is not a valid host: its last label "3" is all digits`},
		{name: "se wildcard in the middle", kind: istioconfig.KindServiceEntry, spec: "hosts: ['a.*.com']", err: `spec.hosts[0]: "a.*.com" is not a valid host`},
		{name: "se bad host label", kind: istioconfig.KindServiceEntry, spec: "hosts: [bad_host.com]", err: `spec.hosts[0]: "bad_host.com" is not a valid host`},
		{name: "se empty label", kind: istioconfig.KindServiceEntry, spec: "hosts: [a..com]", err: `spec.hosts[0]: "a..com" is not a valid host`},
		{name: "se host too long", kind: istioconfig.KindServiceEntry, spec: "hosts: [" + strings.Repeat("a.", 128) + "com]", err: "spec.hosts[0]: "},
		{name: "se bad address", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\naddresses: [10.0.0.300]", err: `spec.addresses[0]: "10.0.0.300" is not an IP address or CIDR`},
		{name: "se cidr with DNS", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\naddresses: [10.0.0.0/24]\nresolution: DNS", err: "spec.resolution: DNS cannot be used with CIDR addresses"},
		{name: "se cidr with NONE ok", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\naddresses: [10.0.0.0/24, '2001:db8::/32']"},
		{name: "se port 0", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nports: [{number: 0, name: http}]", err: "spec.ports[0].number: 0 is not a valid port"},
		{name: "se port too big", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nports: [{number: 65536, name: http}]", err: "spec.ports[0].number: 65536 is not a valid port"},
		{name: "se target port too big", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nports: [{number: 80, name: http, targetPort: 70000}]", err: "spec.ports[0].targetPort: 70000"},
		{name: "se port name missing", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nports: [{number: 80}]", err: "spec.ports[0].name: is required"},
		{name: "se port name invalid", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nports: [{number: 80, name: http_web}]", err: `spec.ports[0].name: "http_web" is not a valid port name`},
		{name: "se duplicate port name", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nports: [{number: 80, name: http}, {number: 81, name: http}]", err: `spec.ports[1].name: port name "http" is used twice`},
		{name: "se duplicate port number", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nports: [{number: 80, name: a}, {number: 80, name: b}]", err: "spec.ports[1].number: port 80 is listed twice"},
		{name: "se bad protocol", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nports: [{number: 80, name: a, protocol: HTTP3}]", err: `spec.ports[0].protocol: "HTTP3" is not a supported protocol`},
		{name: "se protocol any case", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nports: [{number: 80, name: a, protocol: grpc}]"},
		{name: "se NONE with endpoints", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nendpoints: [{address: 10.0.0.1}]", err: "spec.endpoints: resolution NONE takes no endpoints"},
		{name: "se STATIC needs IPs", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nresolution: STATIC\nendpoints: [{address: b.com}]", err: `spec.endpoints[0].address: "b.com" is not an IP address`},
		{name: "se STATIC empty address", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nresolution: STATIC\nendpoints: [{labels: {a: b}}]", err: "spec.endpoints[0].address: is required"},
		{name: "se STATIC unknown endpoint port", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nresolution: STATIC\nports: [{number: 80, name: http}]\nendpoints: [{address: 10.0.0.1, ports: {grpc: 9000}}]", err: `spec.endpoints[0].ports.grpc: port "grpc" is not one of the ServiceEntry's ports`},
		{name: "se STATIC unix ok", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nresolution: STATIC\nports: [{number: 80, name: http, protocol: HTTP}]\nendpoints: [{address: 'unix:///var/run/a.sock'}]"},
		{name: "se DYNAMIC_DNS warns", kind: istioconfig.KindServiceEntry, spec: "hosts: ['*.dyn.example.com']\nresolution: DYNAMIC_DNS\nlocation: MESH_EXTERNAL\nports: [{number: 80, name: http, protocol: HTTP}]",
			warn: "spec.resolution: DYNAMIC_DNS (istiod's dynamic forward proxy cluster and filter, which istiod builds by default) is not generated by xdslab"},
		{name: "se DYNAMIC_DNS exact host", kind: istioconfig.KindServiceEntry, spec: "hosts: [dyn.example.com]\nresolution: DYNAMIC_DNS\nports: [{number: 80, name: http, protocol: HTTP}]",
			err: `spec.hosts[0]: "dyn.example.com": resolution DYNAMIC_DNS needs wildcard hosts`},
		{name: "se DYNAMIC_DNS TCP port", kind: istioconfig.KindServiceEntry, spec: "hosts: ['*.dyn.example.com']\nresolution: DYNAMIC_DNS\nports: [{number: 5432, name: pg, protocol: TCP}]",
			err: `spec.ports[0].protocol: "TCP": resolution DYNAMIC_DNS takes HTTP, TLS, GRPC or HTTP2 ports`},
		{name: "se no protocol no address is sniffed", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nresolution: DNS\nports: [{number: 80, name: http}]"},
		{name: "se no protocol with a VIP is sniffed", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\naddresses: [240.0.0.1]\nresolution: DNS\nports: [{number: 80, name: http}]"},
		{name: "se STATIC unix relative", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nresolution: STATIC\nports: [{number: 80, name: http}]\nendpoints: [{address: 'unix://a.sock'}]", err: `spec.endpoints[0].address: "unix://a.sock" is not an absolute socket path`},
		{name: "se STATIC unix directory", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nresolution: STATIC\nports: [{number: 80, name: http}]\nendpoints: [{address: 'unix:///var/run/'}]", err: `spec.endpoints[0].address: "unix:///var/run/" is not an absolute socket path`},
		{name: "se STATIC unix abstract ok", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nresolution: STATIC\nports: [{number: 80, name: http}]\nendpoints: [{address: 'unix://@abstract'}]"},
		{name: "se STATIC unix two ports", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nresolution: STATIC\nports: [{number: 80, name: http}, {number: 81, name: b}]\nendpoints: [{address: 'unix:///a.sock'}]", err: "spec.ports: a ServiceEntry with unix socket endpoints needs exactly one port"},
		{name: "se STATIC unix with ports", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nresolution: STATIC\nports: [{number: 80, name: http}]\nendpoints: [{address: 'unix:///a.sock', ports: {http: 80}}]", err: "spec.endpoints[0].ports: a unix socket endpoint has no ports"},
		{name: "se STATIC without endpoints ok (scaled to zero)", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nresolution: STATIC"},
		{name: "se STATIC with selector ok", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nresolution: STATIC\nworkloadSelector: {labels: {app: a}}"},
		{name: "se empty selector warns", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nresolution: STATIC\nworkloadSelector: {labels: {}}", warn: "spec.workloadSelector.labels: is empty"},
		{name: "se selector with NONE warns", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nworkloadSelector: {labels: {app: a}}", warn: "spec.workloadSelector: with resolution NONE only gives each selected workload an outbound listener"},
		{name: "se partial wildcard warns", kind: istioconfig.KindServiceEntry, spec: "hosts: ['*foo.com']", warn: `spec.hosts[0]: "*foo.com" is a partial wildcard`},
		{name: "se STATIC endpoint on a network warns", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nresolution: STATIC\nendpoints: [{network: n2}]", warn: `spec.endpoints[0].address: is empty: the endpoint on network "n2"`},
		{name: "se selector and endpoints", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nresolution: STATIC\nworkloadSelector: {labels: {app: a}}\nendpoints: [{address: 10.0.0.1}]", err: "spec.workloadSelector: a ServiceEntry takes either endpoints or a workloadSelector"},
		{name: "se selector wildcard", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nresolution: STATIC\nworkloadSelector: {labels: {app: '*'}}", err: "spec.workloadSelector.labels.app: wildcards are not supported"},
		{name: "se DNS wildcard host without endpoints", kind: istioconfig.KindServiceEntry, spec: "hosts: ['*.a.com']\nresolution: DNS", err: `spec.hosts[0]: "*.a.com" cannot be resolved by DNS`},
		{name: "se DNS wildcard host with endpoints ok", kind: istioconfig.KindServiceEntry, spec: "hosts: ['*.a.com']\nresolution: DNS\nendpoints: [{address: b.a.com}]"},
		{name: "se DNS bad endpoint", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nresolution: DNS\nendpoints: [{address: '*.b.com'}]", err: `spec.endpoints[0].address: "*.b.com" is neither an IP address nor a fully qualified domain name`},
		{name: "se DNS bad endpoint port name", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nresolution: DNS\nports: [{number: 80, name: http}]\nendpoints: [{address: b.com, ports: {HTTP_X: 80}}]", err: `spec.endpoints[0].ports.HTTP_X: port "HTTP_X" is not one of`},
		{name: "se DNS_ROUND_ROBIN two endpoints", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nresolution: DNS_ROUND_ROBIN\nendpoints: [{address: b.com}, {address: c.com}]", err: "spec.endpoints: resolution DNS_ROUND_ROBIN takes at most one endpoint"},
		{name: "se several hosts on TCP", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com, b.com]\nresolution: DNS\nports: [{number: 5432, name: tcp, protocol: TCP}]", err: "spec.ports[0].protocol: several hosts share port 5432"},
		{name: "se several hosts on HTTP ok", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com, b.com]\nresolution: DNS\nports: [{number: 80, name: http, protocol: HTTP}]"},
		{name: "se endpoint label value", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nresolution: STATIC\nendpoints: [{address: 10.0.0.1, labels: {version: 'v 1'}}]", err: `spec.endpoints[0].labels.version: label value "v 1" is invalid`},
		{name: "se exportTo bad", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nexportTo: [Foo]", err: `spec.exportTo[0]: "Foo" is not a namespace`},
		{name: "se exportTo duplicate", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nexportTo: [., default]", err: `spec.exportTo[1]: "default" is listed twice`},
		{name: "se exportTo star with others", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nexportTo: ['*', a]", err: `spec.exportTo[0]: "*" cannot be combined`},
		{name: "se exportTo none ok", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nexportTo: ['~']"},

		// WorkloadEntry (ValidateWorkloadEntry)
		{name: "we ok", kind: istioconfig.KindWorkloadEntry, spec: "address: 10.0.0.1\nports: {http: 8080}\nlabels: {app: a}"},
		{name: "we host name ok", kind: istioconfig.KindWorkloadEntry, spec: "address: vm.example.com"},
		{name: "we no address", kind: istioconfig.KindWorkloadEntry, spec: "labels: {app: a}", err: "spec.address: is required"},
		{name: "we address on another network warns", kind: istioconfig.KindWorkloadEntry, spec: "network: net2", warn: `spec.address: is empty: the workload on network "net2"`},
		{name: "we wildcard address", kind: istioconfig.KindWorkloadEntry, spec: "address: '*.example.com'", err: `spec.address: "*.example.com": wildcards are not allowed`},
		{name: "we unix with ports", kind: istioconfig.KindWorkloadEntry, spec: "address: 'unix:///a.sock'\nports: {http: 80}", err: "spec.ports: a unix socket workload has no ports"},
		{name: "we port 0", kind: istioconfig.KindWorkloadEntry, spec: "address: 10.0.0.1\nports: {http: 0}", err: "spec.ports.http: 0 is not a valid port"},
		{name: "we port name", kind: istioconfig.KindWorkloadEntry, spec: "address: 10.0.0.1\nports: {'http web': 80}", err: `spec.ports.http web: "http web" is not a valid port name`},
		{name: "we label key", kind: istioconfig.KindWorkloadEntry, spec: "address: 10.0.0.1\nlabels: {'-app': a}", err: `spec.labels.-app: label key "-app" is invalid`},
		{name: "we label prefix", kind: istioconfig.KindWorkloadEntry, spec: "address: 10.0.0.1\nlabels: {'Example.com/app': a}", err: `spec.labels.Example.com/app: label key "Example.com/app" has an invalid prefix`},
		{name: "we label prefix ok", kind: istioconfig.KindWorkloadEntry, spec: "address: 10.0.0.1\nlabels: {'app.kubernetes.io/name': a}"},

		// VirtualService (ValidateVirtualService)
		{name: "vs ok", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp:\n- route:\n  - destination: {host: r, subset: v1}\n    weight: 90\n  - destination: {host: r, subset: v2}\n    weight: 10\n  timeout: 2s"},
		{name: "vs no routes", kind: istioconfig.KindVirtualService, spec: "hosts: [r]", err: "spec: a VirtualService needs http, tls or tcp routes"},
		{name: "vs delegate ok", kind: istioconfig.KindVirtualService, spec: "http: [{route: [{destination: {host: r}}]}]"},
		{name: "vs no hosts with gateways", kind: istioconfig.KindVirtualService, spec: "gateways: [gw]\nhttp: [{route: [{destination: {host: r}}]}]", err: "spec.hosts: is required when gateways are set"},
		{name: "vs no hosts with tcp", kind: istioconfig.KindVirtualService, spec: "tcp: [{route: [{destination: {host: r}}]}]", err: "spec.hosts: is required for tls and tcp routes"},
		{name: "vs * on mesh", kind: istioconfig.KindVirtualService, spec: "hosts: ['*']\nhttp: [{route: [{destination: {host: r}}]}]", err: `spec.hosts[0]: "*" is not allowed for a VirtualService bound to the mesh`},
		{name: "vs * on gateway ok", kind: istioconfig.KindVirtualService, spec: "hosts: ['*']\ngateways: [istio-system/gw]\nhttp: [{route: [{destination: {host: r}}]}]"},
		{name: "vs bad host", kind: istioconfig.KindVirtualService, spec: "hosts: [r_1]\nhttp: [{route: [{destination: {host: r}}]}]", err: `spec.hosts[0]: "r_1" is not a valid host`},
		{name: "vs bad gateway", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\ngateways: [a/b/c]\nhttp: [{route: [{destination: {host: r}}]}]", err: `spec.gateways[0]: "a/b/c" is not a gateway reference`},
		{name: "vs weights not 100", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp:\n- route:\n  - destination: {host: r, subset: v1}\n    weight: 60\n  - destination: {host: r, subset: v2}\n    weight: 60", warn: "spec.http[0].route: the weights add up to 120, not 100"},
		{name: "vs all weights 0", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp:\n- route:\n  - destination: {host: r, subset: v1}\n    weight: 0\n  - destination: {host: r, subset: v2}", err: "spec.http[0].route: every destination has weight 0"},
		{name: "vs one weight any", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}, weight: 30}]}]"},
		{name: "vs weight > 100 as istiod admits it", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}, weight: 130}]}]"},
		{name: "vs weights as relative shares past 100", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r, subset: v1}, weight: 700}, {destination: {host: r, subset: v2}, weight: 300}]}]", warn: "spec.http[0].route: the weights add up to 1000, not 100"},
		{name: "vs negative weight", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\ntls: [{match: [{sniHosts: [r]}], route: [{destination: {host: r}, weight: -5}]}]", err: "spec.tls[0].route[0].weight: -5 is negative"},
		{name: "vs tcp weights", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\ntcp: [{route: [{destination: {host: a}, weight: 50}, {destination: {host: b}, weight: 40}]}]", warn: "spec.tcp[0].route: the weights add up to 90"},
		{name: "vs no destination", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{weight: 100}]}]", err: "spec.http[0].route[0].destination: is required"},
		{name: "vs destination host *", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: '*'}}]}]", err: `spec.http[0].route[0].destination.host: "*" is not a destination`},
		{name: "vs destination no host", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {subset: v1}}]}]", err: "spec.http[0].route[0].destination.host: is required"},
		{name: "vs bad subset name", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r, subset: v_1}}]}]", err: `spec.http[0].route[0].destination.subset: "v_1" is not a valid subset name`},
		{name: "vs destination port", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r, port: {number: 0}}}]}]", err: "spec.http[0].route[0].destination.port.number: 0 is not a valid port"},
		{name: "vs http without route", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{timeout: 1s}]", err: "spec.http[0].route: is required"},
		{name: "vs route and redirect", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{redirect: {uri: /x}, route: [{destination: {host: r}}]}]", err: "spec.http[0].redirect: an http route has either route or redirect"},
		{name: "vs empty redirect", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{redirect: {redirectCode: 301}}]", err: "spec.http[0].redirect: says nothing to change"},
		{name: "vs redirect code", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{redirect: {uri: /x, redirectCode: 200}}]", err: "spec.http[0].redirect.redirectCode: 200 is not a redirect status"},
		{name: "vs redirect scheme", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{redirect: {scheme: ftp}}]", err: `spec.http[0].redirect.scheme: "ftp" is not a redirect scheme`},
		{name: "vs rewrite uri and regex", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{rewrite: {uri: /a, uriRegexRewrite: {match: a, rewrite: b}}, route: [{destination: {host: r}}]}]", err: "spec.http[0].rewrite.uriRegexRewrite: a rewrite has either uri or uriRegexRewrite"},
		{name: "vs direct response ok", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{directResponse: {status: 503}}]"},
		{name: "vs direct response status", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{directResponse: {status: 42}}]", err: "spec.http[0].directResponse.status: 42 is not an HTTP status"},
		{name: "vs empty rewrite", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{rewrite: {}, route: [{destination: {host: r}}]}]", err: "spec.http[0].rewrite: says nothing to rewrite"},
		{name: "vs timeout too short", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], timeout: 0.0005s}]", err: "spec.http[0].timeout: 500µs is too short"},
		{name: "vs timeout precision", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], timeout: 1.0005s}]", err: "spec.http[0].timeout: 1.0005s has sub-millisecond precision"},
		{name: "vs retries negative", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], retries: {attempts: -1}}]", err: "spec.http[0].retries.attempts: -1 is negative"},
		{name: "vs retries 0 with settings", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], retries: {attempts: 0, perTryTimeout: 1s}}]", err: "spec.http[0].retries.attempts: is 0, which disables retries"},
		{name: "vs per-try timeout", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], retries: {attempts: 2, perTryTimeout: 0s}}]", err: "spec.http[0].retries.perTryTimeout: 0s is too short"},
		{name: "vs fault percentage", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], fault: {abort: {httpStatus: 503, percentage: {value: 120}}}}]", err: "spec.http[0].fault.abort.percentage.value: 120 is not a percentage"},
		{name: "vs fault delay missing", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], fault: {delay: {percentage: {value: 10}}}}]", err: "spec.http[0].fault.delay.fixedDelay: is required"},
		{name: "vs fault abort status", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], fault: {abort: {httpStatus: 99}}}]", err: "spec.http[0].fault.abort.httpStatus: 99 is not an HTTP status"},
		{name: "vs mirror percentage", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], mirror: {host: m}, mirrorPercentage: {value: 101}}]", err: "spec.http[0].mirrorPercentage.value: 101 is not a percentage"},
		{name: "vs retryOn bogus", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], retries: {attempts: 2, retryOn: 'bogus-policy'}}]", err: `spec.http[0].retries.retryOn: "bogus-policy" is not a retryOn policy`},
		{name: "vs retryOn codes ok", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], retries: {attempts: 2, retryOn: '5xx,503,gateway-error,unavailable'}}]"},
		{name: "vs retryOn space", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], retries: {attempts: 2, retryOn: '5xx, reset'}}]", err: `spec.http[0].retries.retryOn: " reset" is not a retryOn policy`},
		{name: "vs retry remote localities off", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], retries: {attempts: 0, retryRemoteLocalities: true}}]", err: "spec.http[0].retries.retryRemoteLocalities: is set while attempts is 0"},
		{name: "vs fault grpc status", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], fault: {abort: {grpcStatus: NOPE}}}]", err: `spec.http[0].fault.abort.grpcStatus: "NOPE" is not a gRPC status name`},
		{name: "vs fault grpc status ok", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], fault: {abort: {grpcStatus: UNAVAILABLE, percentage: {value: 5}}}}]"},
		{name: "vs fault exponential delay", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], fault: {delay: {exponentialDelay: 1s}}}]", err: "spec.http[0].fault.delay.exponentialDelay: is not supported"},
		{name: "vs mirror and mirrors", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], mirror: {host: m}, mirrors: [{destination: {host: mm}}]}]", err: "spec.http[0].mirrors: an http route has either mirror or mirrors"},
		{name: "vs mirrors no destination", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], mirrors: [{percentage: {value: 5}}]}]", err: "spec.http[0].mirrors[0].destination: is required"},
		{name: "vs mirrors percentage", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], mirrors: [{destination: {host: m}, percentage: {value: 150}}]}]", err: "spec.http[0].mirrors[0].percentage.value: 150 is not a percentage"},
		{name: "vs mirrorPercent deprecated", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], mirror: {host: m}, mirrorPercent: 50}]", warn: "spec.http[0].mirrorPercent: is deprecated"},
		{name: "vs headers ok", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}, headers: {response: {set: {x-b: '2'}}}}], headers: {request: {set: {x-a: '1', ':authority': a.example}, remove: [x-old]}}}]"},
		{name: "vs headers pseudo", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], headers: {request: {set: {':path': /x}}}}]", err: `spec.http[0].headers.request.set.:path: ":path" cannot be changed here`},
		{name: "vs headers remove host", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], headers: {request: {remove: [Host]}}}]", err: `spec.http[0].headers.request.remove[0]: "Host" cannot be changed here`},
		{name: "vs headers response authority", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}, headers: {response: {add: {host: h}}}}]}]", err: `spec.http[0].route[0].headers.response.add.host: "host" cannot be changed here`},
		{name: "vs authority twice", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], rewrite: {authority: a}, headers: {request: {set: {host: b}}}}]", err: "spec.http[0].headers.request: sets the authority (host) although rewrite.authority"},
		{name: "vs match port", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{port: 70000}], route: [{destination: {host: r}}]}]", err: "spec.http[0].match[0].port: 70000 is not a valid port"},
		{name: "vs match header uppercase", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{headers: {X-User: {exact: a}}}], route: [{destination: {host: r}}]}]", err: `spec.http[0].match[0].headers.X-User: header name "X-User" must be lowercase`},
		{name: "vs match source labels", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{sourceLabels: {app: 'a b'}}], route: [{destination: {host: r}}]}]", err: `spec.http[0].match[0].sourceLabels.app: label value "a b" is invalid`},
		{name: "vs tls without match", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\ntls: [{route: [{destination: {host: r}}]}]", err: "spec.tls[0].match: is required"},
		{name: "vs tls without sni", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\ntls: [{match: [{port: 443}], route: [{destination: {host: r}}]}]", err: "spec.tls[0].match[0].sniHosts: is required"},
		{name: "vs tls for sidecars generated", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\ntls: [{match: [{sniHosts: [r]}], route: [{destination: {host: r}}]}]"},
		// istiod refuses an SNI host none of the VirtualService's hosts covers; a wildcard host
		// covers names under it, an IP is only warned about.
		{name: "vs tls sni outside hosts", kind: istioconfig.KindVirtualService, spec: "hosts: [api.example.com]\ntls: [{match: [{sniHosts: [web.example.com]}], route: [{destination: {host: api.example.com}}]}]", err: `spec.tls[0].match[0].sniHosts[0]: "web.example.com" is not covered by any of the VirtualService's hosts [api.example.com]`},
		{name: "vs tls sni wildcard wider than host", kind: istioconfig.KindVirtualService, spec: "hosts: ['*.api.example.com']\ntls: [{match: [{sniHosts: ['*.example.com']}], route: [{destination: {host: api.example.com}}]}]", err: `spec.tls[0].match[0].sniHosts[0]: "*.example.com" is not covered`},
		{name: "vs tls sni under wildcard host", kind: istioconfig.KindVirtualService, spec: "hosts: ['*.example.com']\ntls: [{match: [{sniHosts: [a.example.com, '*.b.example.com']}], route: [{destination: {host: a.example.com}}]}]"},
		{name: "vs tls sni ip", kind: istioconfig.KindVirtualService, spec: "hosts: [api.example.com]\ntls: [{match: [{sniHosts: [10.1.2.3]}], route: [{destination: {host: api.example.com}}]}]", warn: `spec.tls[0].match[0].sniHosts[0]: "10.1.2.3" is an IP address`},
		{name: "vs tls sni auto passthrough", kind: istioconfig.KindVirtualService, spec: "hosts: ['*']\ngateways: [gw]\ntls: [{match: [{sniHosts: [outbound_.443_._.api.example.com]}], route: [{destination: {host: api.example.com}}]}]"},
		{name: "vs tls sni auto passthrough malformed", kind: istioconfig.KindVirtualService, spec: "hosts: ['*']\ngateways: [gw]\ntls: [{match: [{sniHosts: [outbound_.x_.api]}], route: [{destination: {host: api.example.com}}]}]", err: `spec.tls[0].match[0].sniHosts[0]: "outbound_.x_.api" is not a valid auto-generated SNI`},
		{name: "vs tls sni auto passthrough mesh", kind: istioconfig.KindVirtualService, spec: "hosts: [api.example.com]\ngateways: [mesh]\ntls: [{match: [{sniHosts: [outbound_.443_._.api.example.com]}], route: [{destination: {host: api.example.com}}]}]", err: `spec.tls[0].match[0].sniHosts[0]: "outbound_.443_._.api.example.com" is not a valid host`},
		{name: "vs tls on gateway generated", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\ngateways: [gw]\ntls: [{match: [{sniHosts: [r]}], route: [{destination: {host: r}}]}]"},
		{name: "vs cors generated", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], corsPolicy: {allowOrigins: [{exact: 'https://a.example'}]}}]"},
		{name: "vs delegate generated", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{uri: {prefix: /api}}], delegate: {name: d, namespace: other}, timeout: 3s}]"},
		{name: "vs delegate route with route", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{delegate: {name: d}, route: [{destination: {host: r}}]}]", err: "spec.http[0].route: a route with delegate takes its destinations from the delegate VirtualService"},
		{name: "vs delegate route with redirect", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{delegate: {name: d}, redirect: {uri: /x}}]", err: "spec.http[0].redirect: a route with delegate takes its actions from the delegate VirtualService"},
		{name: "vs delegate of a delegate", kind: istioconfig.KindVirtualService, spec: "http: [{delegate: {name: d}}]", err: "spec.http[0].delegate: a delegate VirtualService (one without hosts) cannot delegate again"},
		{name: "vs delegate without name", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{delegate: {namespace: other}}]", warn: "spec.http[0].delegate.name: is empty"},
		{name: "vs match regexes ok", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{headers: {x-a: {regex: '^a.*'}}, queryParams: {q: {regex: 'b+'}}, uri: {regex: '/a/[0-9]+'}, authority: {regex: '.*\\.example\\.com'}, method: {regex: 'GET|POST'}, scheme: {regex: 'https?'}}], route: [{destination: {host: r}}]}]"},
		{name: "vs match empty uri prefix and exact ok", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{uri: {prefix: ''}, headers: {x-a: {exact: ''}, x-b: {}}}], route: [{destination: {host: r}}]}]"},
		{name: "vs match pseudo headers ok", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{headers: {':path': {prefix: /a}}, withoutHeaders: {':method': {exact: GET}}}], route: [{destination: {host: r}}]}]"},
		{name: "vs match claim header generated", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{headers: {'@request.auth.claims.sub': {exact: u}}}], route: [{destination: {host: r}}]}]"},
		{name: "vs withoutHeaders claim generated", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{withoutHeaders: {'@request.auth.claims[grp]': {exact: g}}}], route: [{destination: {host: r}}]}]"},
		{name: "vs match regex 1024 ok", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{uri: {regex: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'}}], route: [{destination: {host: r}}]}]"},
		{name: "vs match header empty regex", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{headers: {x-a: {regex: ''}}}], route: [{destination: {host: r}}]}]", err: `spec.http[0].match[0].headers.x-a.regex: is empty: write an RE2 regex`},
		{name: "vs match uri lookahead", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{uri: {regex: '/a(?=b)'}}], route: [{destination: {host: r}}]}]", err: `spec.http[0].match[0].uri.regex: "/a(?=b)" is not an RE2 regex`},
		{name: "vs match uri \\C", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{uri: {regex: '/\\Cx'}}], route: [{destination: {host: r}}]}]", err: `spec.http[0].match[0].uri.regex: "/\\Cx" is not an RE2 regex`},
		{name: "vs match uri empty regex", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{uri: {regex: ''}}], route: [{destination: {host: r}}]}]", err: `spec.http[0].match[0].uri.regex: is empty`},
		{name: "vs match regex too long", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{authority: {regex: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'}}], route: [{destination: {host: r}}]}]", err: `spec.http[0].match[0].authority.regex: is 1025 bytes long, more than the 1024 istiod allows`},
		{name: "vs match method bad regex", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{method: {regex: 'GET|(POST'}}], route: [{destination: {host: r}}]}]", err: `spec.http[0].match[0].method.regex: "GET|(POST" is not an RE2 regex`},
		{name: "vs match scheme empty regex", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{scheme: {regex: ''}}], route: [{destination: {host: r}}]}]", err: `spec.http[0].match[0].scheme.regex: is empty`},
		{name: "vs match query empty regex", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{queryParams: {q: {regex: ''}}}], route: [{destination: {host: r}}]}]", err: `spec.http[0].match[0].queryParams.q.regex: is empty`},
		{name: "vs match without header bad regex", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{withoutHeaders: {x-a: {regex: 'a**'}}}], route: [{destination: {host: r}}]}]", err: `spec.http[0].match[0].withoutHeaders.x-a.regex: "a**" is not an RE2 regex`},
		{name: "vs match without header regex star", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{withoutHeaders: {x-a: {regex: '*'}}}], route: [{destination: {host: r}}]}]", warn: `spec.http[0].match[0].withoutHeaders.x-a.regex: is accepted but not generated by xdslab: regex "*"`},
		{name: "vs match header empty prefix", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{headers: {x-a: {prefix: ''}}}], route: [{destination: {host: r}}]}]", err: `spec.http[0].match[0].headers.x-a.prefix: is empty, which istiod rejects`},
		{name: "vs match without header empty prefix", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{withoutHeaders: {x-a: {prefix: ''}}}], route: [{destination: {host: r}}]}]", err: `spec.http[0].match[0].withoutHeaders.x-a.prefix: is empty`},
		{name: "vs match query empty prefix", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{queryParams: {q: {prefix: ''}}}], route: [{destination: {host: r}}]}]", err: `spec.http[0].match[0].queryParams.q.prefix: is empty`},
		{name: "vs match authority empty prefix", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{authority: {prefix: ''}}], route: [{destination: {host: r}}]}]", err: `spec.http[0].match[0].authority.prefix: is empty`},
		{name: "vs match method empty prefix", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{method: {prefix: ''}}], route: [{destination: {host: r}}]}]", err: `spec.http[0].match[0].method.prefix: is empty`},
		{name: "vs match scheme empty prefix", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{scheme: {prefix: ''}}], route: [{destination: {host: r}}]}]", err: `spec.http[0].match[0].scheme.prefix: is empty`},
		{name: "vs match header name space", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{headers: {'x a': {exact: b}}}], route: [{destination: {host: r}}]}]", err: `spec.http[0].match[0].headers.x a: header name "x a" is not a valid HTTP header name`},
		{name: "vs match without header name colon", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{match: [{withoutHeaders: {'x:a': {}}}], route: [{destination: {host: r}}]}]", err: `spec.http[0].match[0].withoutHeaders.x:a: header name "x:a" is not a valid HTTP header name`},
		{name: "vs uri regex rewrite bad match", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{rewrite: {uriRegexRewrite: {match: '^/a(?!b)', rewrite: /c}}, route: [{destination: {host: r}}]}]", err: `spec.http[0].rewrite.uriRegexRewrite.match: "^/a(?!b)" is not an RE2 regex`},
		{name: "vs cors ok", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], corsPolicy: {allowOrigins: [{exact: 'https://a.example'}, {prefix: 'https://b'}, {regex: 'https://.*[.]example[.]com'}], allowMethods: [GET, POST, '*'], allowHeaders: [x-a, '*'], exposeHeaders: [x-b], maxAge: 24h, allowCredentials: true}}]"},
		{name: "vs cors origin bad regex", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], corsPolicy: {allowOrigins: [{exact: 'https://a.example'}, {regex: 'https://(a|b'}]}}]", err: `spec.http[0].corsPolicy.allowOrigins[1].regex: "https://(a|b" is not an RE2 regex`},
		{name: "vs cors origin too long", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], corsPolicy: {allowOrigins: [{regex: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'}]}}]", err: `spec.http[0].corsPolicy.allowOrigins[0].regex: is 1100 bytes long`},
		{name: "vs cors origin empty", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], corsPolicy: {allowOrigins: [{prefix: ''}]}}]", err: `spec.http[0].corsPolicy.allowOrigins[0]: matches no origin`},
		{name: "vs cors origin no match type", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], corsPolicy: {allowOrigins: [{}]}}]", err: `spec.http[0].corsPolicy.allowOrigins[0]: matches no origin`},
		{name: "vs cors method", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], corsPolicy: {allowMethods: [GET, get]}}]", err: `spec.http[0].corsPolicy.allowMethods[1]: "get" is not an HTTP method istiod accepts`},
		{name: "vs cors method unknown", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], corsPolicy: {allowMethods: [PURGE]}}]", err: `spec.http[0].corsPolicy.allowMethods[0]: "PURGE" is not an HTTP method`},
		{name: "vs cors allow header", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], corsPolicy: {allowHeaders: ['x a']}}]", err: `spec.http[0].corsPolicy.allowHeaders[0]: "x a" is not a valid HTTP header name`},
		{name: "vs cors expose header empty", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], corsPolicy: {exposeHeaders: ['']}}]", err: `spec.http[0].corsPolicy.exposeHeaders[0]: a header name is empty`},
		{name: "vs cors max age fraction", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], corsPolicy: {maxAge: 1.5s}}]", err: `spec.http[0].corsPolicy.maxAge: 1.5s has a fraction of a second`},
		{name: "vs cors max age too short", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], corsPolicy: {maxAge: 0s}}]", err: `spec.http[0].corsPolicy.maxAge: 0s is too short`},
		{name: "vs header values ok", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}, headers: {response: {add: {x-c: '%UPSTREAM_METADATA([\"ns\", \"k\"])%'}}}}], headers: {request: {set: {x-a: '100%%', x-b: 'ip %DOWNSTREAM_REMOTE_ADDRESS% id %REQ(x-id)%', x-e: ''}}}}]"},
		{name: "vs header value lone percent", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], headers: {request: {set: {x-a: '100%'}}}}]", err: `spec.http[0].headers.request.set.x-a: the value of "x-a" ends with a lone '%'`},
		{name: "vs header value percent space", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], headers: {response: {add: {x-a: '50% off'}}}}]", err: `spec.http[0].headers.response.add.x-a: the value of "x-a" has a '%' that starts a %VARIABLE% which never ends`},
		{name: "vs destination header value unterminated", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}, headers: {response: {set: {x-ip: '%DOWNSTREAM_REMOTE_ADDRESS'}}}}]}]", err: `spec.http[0].route[0].headers.response.set.x-ip: the value of "x-ip" has a '%' that starts a %VARIABLE% which never ends`},
		{name: "vs destination header value bad args", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}, headers: {request: {add: {x-m: '%UPSTREAM_METADATA([ns])%'}}}}]}]", err: `spec.http[0].route[0].headers.request.add.x-m: the value of "x-m" has an argument array whose items are not quoted strings`},
		{name: "vs header value after args", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], headers: {request: {set: {x-a: '%REQ(x-id) x%'}}}}]", err: `spec.http[0].headers.request.set.x-a: the value of "x-a" has something other than '%' after`},
		{name: "vs headers remove pseudo", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}], headers: {response: {remove: [':status']}}}]", err: `spec.http[0].headers.response.remove[0]: ":status" cannot be changed here`},
		{name: "vs exportTo ~", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\nhttp: [{route: [{destination: {host: r}}]}]\nexportTo: ['~']", err: `spec.exportTo[0]: "~" (export to no namespace) is only allowed on a ServiceEntry`},

		// DestinationRule (ValidateDestinationRule)
		{name: "dr ok", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {outlierDetection: {interval: 10s, maxEjectionPercent: 50}}\nsubsets: [{name: v1, labels: {version: v1}}]"},
		{name: "dr no host", kind: istioconfig.KindDestinationRule, spec: "subsets: [{name: v1}]", err: "spec.host: is required"},
		{name: "dr bad host", kind: istioconfig.KindDestinationRule, spec: "host: 'r*'", err: `spec.host: "r*" is not a valid host`},
		{name: "dr subset no name", kind: istioconfig.KindDestinationRule, spec: "host: r\nsubsets: [{labels: {version: v1}}]", err: "spec.subsets[0].name: is required"},
		{name: "dr subset bad name", kind: istioconfig.KindDestinationRule, spec: "host: r\nsubsets: [{name: V.1}]", err: `spec.subsets[0].name: "V.1" is not a valid subset name`},
		{name: "dr duplicate subset", kind: istioconfig.KindDestinationRule, spec: "host: r\nsubsets: [{name: v1}, {name: v1}]", err: `spec.subsets[1].name: subset "v1" is defined twice`},
		{name: "dr subset labels", kind: istioconfig.KindDestinationRule, spec: "host: r\nsubsets: [{name: v1, labels: {version: '-v1'}}]", err: `spec.subsets[0].labels.version: label value "-v1" is invalid`},
		{name: "dr connect timeout", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {connectionPool: {tcp: {connectTimeout: 0s}}}", err: "spec.trafficPolicy.connectionPool.tcp.connectTimeout: 0s is too short"},
		{name: "dr negative max connections", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {connectionPool: {tcp: {maxConnections: -1}}}", err: "spec.trafficPolicy.connectionPool.tcp.maxConnections: -1 is negative"},
		{name: "dr negative http setting", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {connectionPool: {http: {maxRetries: -2}}}", err: "spec.trafficPolicy.connectionPool.http.maxRetries: -2 is negative"},
		{name: "dr max ejection", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {outlierDetection: {maxEjectionPercent: 101}}", err: "spec.trafficPolicy.outlierDetection.maxEjectionPercent: 101 is not a percentage"},
		{name: "dr ejection time", kind: istioconfig.KindDestinationRule, spec: "host: r\nsubsets: [{name: v1, trafficPolicy: {outlierDetection: {baseEjectionTime: 0.0001s}}}]", err: "spec.subsets[0].trafficPolicy.outlierDetection.baseEjectionTime: 100µs is too short"},
		{name: "dr port level without port", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {portLevelSettings: [{connectionPool: {tcp: {maxConnections: 1}}}]}", err: "spec.trafficPolicy.portLevelSettings[0].port: is required"},
		{name: "dr port level twice", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {portLevelSettings: [{port: {number: 80}, tls: {mode: DISABLE}}, {port: {number: 80}, tls: {mode: DISABLE}}]}", err: "spec.trafficPolicy.portLevelSettings[1].port.number: port 80 has settings twice"},
		{name: "dr port level setting nothing", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {portLevelSettings: [{port: {number: 80}}]}", err: "spec.trafficPolicy.portLevelSettings[0]: sets nothing for its port"},
		{name: "vs tcp route without destinations", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\ntcp: [{match: [{port: 9000}]}]", err: "spec.tcp[0].route: is required"},
		{name: "vs tls route without destinations", kind: istioconfig.KindVirtualService, spec: "hosts: [r.com]\ntls: [{match: [{sniHosts: [r.com]}]}]", err: "spec.tls[0].route: is required"},
		{name: "vs tcp bad subnet", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\ntcp: [{match: [{destinationSubnets: [10.0.0.0/33]}], route: [{destination: {host: r}}]}]", err: `spec.tcp[0].match[0].destinationSubnets[0]: "10.0.0.0/33" is not an IP address or CIDR`},
		{name: "vs tcp match bad gateway", kind: istioconfig.KindVirtualService, spec: "hosts: [r]\ngateways: [gw]\ntcp: [{match: [{gateways: [ns/g.w]}], route: [{destination: {host: r}}]}]", err: `spec.tcp[0].match[0].gateways[0]: "ns/g.w" names Gateway "g.w"`},
		{name: "gw server port without name", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 8080, protocol: HTTP}, hosts: ['*']}]", err: "spec.servers[0].port.name: is required"},
		{name: "gw short host", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: [ns1/shop]}]", err: `spec.servers[0].hosts[0]: "ns1/shop": "shop" is a short host name`},
		{name: "sidecar short host", kind: istioconfig.KindSidecar, spec: "egress: [{hosts: [./shop]}]", err: `spec.egress[0].hosts[0]: "./shop": "shop" is a short host name`},
		{name: "pa empty port level mtls", kind: istioconfig.KindPeerAuthentication, spec: "selector: {matchLabels: {app: a}}\nportLevelMtls: {}", err: "spec.portLevelMtls: is empty"},
		{name: "dr empty traffic policy", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {}", err: "spec.trafficPolicy: is empty"},
		{name: "dr empty connection pool", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {connectionPool: {}}", err: "spec.trafficPolicy.connectionPool: is empty"},
		{name: "dr keepalive", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {connectionPool: {tcp: {tcpKeepalive: {time: 0s}}}}", err: "spec.trafficPolicy.connectionPool.tcp.tcpKeepalive.time: 0s is too short"},
		{name: "dr deprecated consecutiveErrors warns", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {outlierDetection: {consecutiveErrors: 5}}", warn: "spec.trafficPolicy.outlierDetection.consecutiveErrors: is deprecated"},
		{name: "dr local origin without split", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {outlierDetection: {consecutiveLocalOriginFailures: 3}}", err: "spec.trafficPolicy.outlierDetection.consecutiveLocalOriginFailures: has no effect"},
		{name: "dr cookie name", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {loadBalancer: {consistentHash: {httpCookie: {ttl: 0s}}}}", err: "spec.trafficPolicy.loadBalancer.consistentHash.httpCookie.name: is required"},
		{name: "dr maglev ok", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {loadBalancer: {consistentHash: {httpHeaderName: x-user, maglev: {tableSize: 65537}}}}"},
		{name: "dr maglev 1000", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {loadBalancer: {consistentHash: {httpHeaderName: x-user, maglev: {tableSize: 1000}}}}", err: `spec.trafficPolicy.loadBalancer.consistentHash.maglev.tableSize: 1000 is not a prime number, which Maglev needs: use 1009`},
		{name: "dr maglev no size", kind: istioconfig.KindDestinationRule, spec: "host: r\nsubsets: [{name: v1, trafficPolicy: {loadBalancer: {consistentHash: {useSourceIp: true, maglev: {}}}}}]", err: `spec.subsets[0].trafficPolicy.loadBalancer.consistentHash.maglev.tableSize: is required for maglev`},
		{name: "dr maglev too large", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {portLevelSettings: [{port: {number: 80}, loadBalancer: {consistentHash: {useSourceIp: true, maglev: {tableSize: 5000011}}}}]}", err: `spec.trafficPolicy.portLevelSettings[0].loadBalancer.consistentHash.maglev.tableSize: 5000011 is too large`},
		{name: "dr cookie attributes ok", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {loadBalancer: {consistentHash: {httpCookie: {name: s, ttl: 0s, attributes: [{name: SameSite, value: Strict}, {name: Secure}]}}}}"},
		{name: "dr cookie attribute twice", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {loadBalancer: {consistentHash: {httpCookie: {name: s, attributes: [{name: Secure}, {name: Secure}]}}}}", err: `spec.trafficPolicy.loadBalancer.consistentHash.httpCookie.attributes[1].name: cookie attribute "Secure" is set twice`},
		{name: "dr cookie attribute no name", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {loadBalancer: {consistentHash: {httpCookie: {name: s, attributes: [{value: v}]}}}}", err: `spec.trafficPolicy.loadBalancer.consistentHash.httpCookie.attributes[0].name: is required`},
		{name: "dr minimum ring size deprecated", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {loadBalancer: {consistentHash: {useSourceIp: true, minimumRingSize: 1024}}}", warn: `spec.trafficPolicy.loadBalancer.consistentHash.minimumRingSize: is deprecated`},
		{name: "dr minimum ring size with maglev", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {loadBalancer: {consistentHash: {useSourceIp: true, minimumRingSize: 1024, maglev: {tableSize: 65537}}}}", err: `spec.trafficPolicy.loadBalancer.consistentHash.minimumRingSize: cannot be set with ringHash or maglev`},
		{name: "dr locality and zone aware", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {loadBalancer: {localityLbSetting: {enabled: true}, zoneAwareLbSetting: {}}}", err: `spec.trafficPolicy.loadBalancer.zoneAwareLbSetting: cannot be set with localityLbSetting`},
		{name: "dr warmup without duration", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {loadBalancer: {warmup: {minimumPercent: 10}}}", err: `spec.trafficPolicy.loadBalancer.warmup.duration: is required`},
		{name: "dr warmup generated", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {loadBalancer: {simple: ROUND_ROBIN, warmup: {duration: 60s, aggression: 1.5}}}"},
		{name: "dr warmup aggression", kind: istioconfig.KindDestinationRule, spec: "host: r\ntrafficPolicy: {loadBalancer: {warmup: {duration: 60s, aggression: 0}}}", err: `spec.trafficPolicy.loadBalancer.warmup.aggression: 0 is not positive`},
		{name: "dr selector", kind: istioconfig.KindDestinationRule, spec: "host: r\nworkloadSelector: {matchLabels: {app: 'a*'}}", err: "spec.workloadSelector.matchLabels.app: wildcards are not supported"},
		{name: "dr selector generated", kind: istioconfig.KindDestinationRule, spec: "host: r\nworkloadSelector: {matchLabels: {app: a}}"},
		{name: "se mongo generated", kind: istioconfig.KindServiceEntry, spec: "hosts: [a.com]\nresolution: DNS\nports: [{name: m, number: 27017, protocol: MONGO}]"},

		// Sidecar (ValidateSidecar)
		{name: "sidecar ok", kind: istioconfig.KindSidecar, spec: "egress: [{hosts: ['./*', 'istio-system/*', '~/*']}]"},
		{name: "sidecar exclusions ok", kind: istioconfig.KindSidecar, spec: "egress: [{hosts: ['*/*', '~team-a/db.team-a.svc.cluster.local', '~./x.example.com', '~*/*.internal']}]"},
		{name: "sidecar exclusion of a bad namespace", kind: istioconfig.KindSidecar, spec: "egress: [{hosts: ['~Team_A/x']}]", err: `spec.egress[0].hosts[0]: "~Team_A/x": "Team_A" is not a namespace`},
		{name: "sidecar empty", kind: istioconfig.KindSidecar, spec: "{}", err: "spec: the Sidecar configures nothing"},
		{name: "sidecar host without namespace", kind: istioconfig.KindSidecar, spec: "egress: [{hosts: [foo.com]}]", err: `spec.egress[0].hosts[0]: "foo.com" has no namespace`},
		{name: "sidecar bad namespace", kind: istioconfig.KindSidecar, spec: "egress: [{hosts: ['Bad_NS/*']}]", err: `spec.egress[0].hosts[0]: "Bad_NS/*": "Bad_NS" is not a namespace`},
		{name: "sidecar bad host", kind: istioconfig.KindSidecar, spec: "egress: [{hosts: ['./a_b.com']}]", err: `spec.egress[0].hosts[0]: "a_b.com" is not a valid host`},
		{name: "sidecar no hosts", kind: istioconfig.KindSidecar, spec: "egress: [{port: {number: 80, name: http, protocol: HTTP}}]", err: "spec.egress[0].hosts: is required"},
		{name: "sidecar portless not last", kind: istioconfig.KindSidecar, spec: "egress: [{hosts: ['./*']}, {port: {number: 80}, hosts: ['./*']}]", err: "spec.egress[0].port: the egress listener without a port must be the last one"},
		{name: "sidecar duplicate egress port", kind: istioconfig.KindSidecar, spec: "egress: [{port: {number: 80}, hosts: ['./*']}, {port: {number: 80}, hosts: ['*/*']}]", err: "spec.egress[1].port.number: port 80 has two egress listeners"},
		{name: "sidecar ingress port", kind: istioconfig.KindSidecar, spec: "ingress: [{defaultEndpoint: '127.0.0.1:8080'}]", err: "spec.ingress[0].port: is required"},
		{name: "sidecar ingress endpoint", kind: istioconfig.KindSidecar, spec: "ingress: [{port: {number: 80, protocol: HTTP, name: http}, defaultEndpoint: '10.0.0.1:8080'}]", err: `spec.ingress[0].defaultEndpoint: "10.0.0.1:8080" is not a local endpoint`},
		{name: "sidecar ingress generated", kind: istioconfig.KindSidecar, spec: "ingress: [{port: {number: 80, protocol: HTTP, name: http}, defaultEndpoint: '0.0.0.0:8080', captureMode: NONE, bind: 0.0.0.0, connectionPool: {tcp: {maxConnections: 5}}}]"},
		{name: "sidecar ingress tls ignored", kind: istioconfig.KindSidecar, spec: "ingress: [{port: {number: 8443, protocol: HTTPS, name: https}, tls: {mode: SIMPLE, serverCertificate: /c.pem, privateKey: /k.pem}}]", warn: "spec.ingress[0].tls: is ignored, as istiod ignores it unless ENABLE_TLS_ON_SIDECAR_INGRESS is set"},
		{name: "sidecar registry only generated", kind: istioconfig.KindSidecar, spec: "outboundTrafficPolicy: {mode: REGISTRY_ONLY}\negress: [{hosts: ['./*']}]"},
		{name: "sidecar egress proxy generated", kind: istioconfig.KindSidecar, spec: "outboundTrafficPolicy: {mode: ALLOW_ANY, egressProxy: {host: squid.proxy.example, port: {number: 3128}}}"},
		{name: "sidecar egress proxy with registry only", kind: istioconfig.KindSidecar, spec: "outboundTrafficPolicy: {mode: REGISTRY_ONLY, egressProxy: {host: squid.proxy.example, port: {number: 3128}}}", err: "spec.outboundTrafficPolicy.egressProxy: is only read with mode ALLOW_ANY"},
		{name: "sidecar egress proxy without port", kind: istioconfig.KindSidecar, spec: "outboundTrafficPolicy: {mode: ALLOW_ANY, egressProxy: {host: squid.proxy.example}}", err: "spec.outboundTrafficPolicy.egressProxy.port: is required"},
		{name: "sidecar egress proxy wildcard host", kind: istioconfig.KindSidecar, spec: "outboundTrafficPolicy: {mode: ALLOW_ANY, egressProxy: {host: '*.proxy.example', port: {number: 3128}}}", err: "spec.outboundTrafficPolicy.egressProxy.host: \"*.proxy.example\" is not a fully qualified domain name"},
		{name: "sidecar egress proxy bad subset", kind: istioconfig.KindSidecar, spec: "outboundTrafficPolicy: {mode: ALLOW_ANY, egressProxy: {host: squid.proxy.example, subset: V_1, port: {number: 3128}}}", err: "spec.outboundTrafficPolicy.egressProxy.subset: \"V_1\" is not a valid subset name"},
		{name: "sidecar empty selector warns", kind: istioconfig.KindSidecar, spec: "workloadSelector: {labels: {}}\negress: [{hosts: ['./*']}]", warn: "spec.workloadSelector.labels: is empty"},
		{name: "sidecar unix egress valid, not generated", kind: istioconfig.KindSidecar, spec: "egress: [{port: {number: 0, protocol: HTTP}, bind: 'unix:///var/run/app.sock', hosts: ['./*']}]", warn: "spec.egress[0].bind: is not generated by xdslab"},
		{name: "sidecar egress ip bind of an http port generated", kind: istioconfig.KindSidecar, spec: "egress: [{port: {number: 80, name: http, protocol: HTTP}, bind: 127.0.0.2, hosts: ['./*']}]"},
		{name: "sidecar egress ip bind of a tcp port generated", kind: istioconfig.KindSidecar, spec: "egress: [{port: {number: 5000, name: tcp, protocol: TCP}, bind: 127.0.0.2, hosts: ['./*']}]"},
		{name: "sidecar capture none of a mysql port generated", kind: istioconfig.KindSidecar, spec: "egress: [{port: {number: 3306, name: mysql, protocol: MYSQL}, captureMode: NONE, hosts: ['./*']}]"},
		{name: "sidecar egress ip bind of a mysql port generated", kind: istioconfig.KindSidecar, spec: "egress: [{port: {number: 3306, name: mysql, protocol: MYSQL}, bind: 127.0.0.2, hosts: ['./*']}]"},
		{name: "sidecar egress ip bind of a tls port not generated", kind: istioconfig.KindSidecar, spec: "egress: [{port: {number: 443, name: tls, protocol: TLS}, bind: 127.0.0.2, hosts: ['./*']}]", warn: "spec.egress[0].bind: is not generated by xdslab here"},
		{name: "sidecar capture none of an http port generated", kind: istioconfig.KindSidecar, spec: "egress: [{port: {number: 80, name: http, protocol: HTTP}, captureMode: NONE, hosts: ['./*']}]"},
		{name: "sidecar capture none of a sniffed port generated", kind: istioconfig.KindSidecar, spec: "egress: [{port: {number: 5000, name: any}, captureMode: NONE, hosts: ['./*']}]"},
		{name: "sidecar capture none of an https port not generated", kind: istioconfig.KindSidecar, spec: "egress: [{port: {number: 443, name: https, protocol: HTTPS}, captureMode: NONE, hosts: ['./*']}]", warn: "spec.egress[0].captureMode: NONE is not generated by xdslab here"},
		{name: "sidecar http proxy not generated", kind: istioconfig.KindSidecar, spec: "egress: [{port: {number: 15080, name: proxy, protocol: HTTP_PROXY}, hosts: ['*/*']}]", warn: "spec.egress[0].port.protocol: HTTP_PROXY is not generated by xdslab"},
		{name: "sidecar port 0 without unix bind", kind: istioconfig.KindSidecar, spec: "egress: [{port: {number: 0, protocol: HTTP}, hosts: ['./*']}]", err: "spec.egress[0].bind: port 0 is a unix socket listener"},
		{name: "sidecar egress bind", kind: istioconfig.KindSidecar, spec: "egress: [{port: {number: 80}, bind: localhost, hosts: ['./*']}]", err: `spec.egress[0].bind: "localhost" is not an IP address`},

		// Gateway (ValidateGateway)
		{name: "gw https credential not served", kind: istioconfig.KindGateway, spec: "selector: {istio: ingressgateway}\nservers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ['ns1/*.example.com'], tls: {mode: SIMPLE, credentialName: cert}}]", warn: "spec.servers[0].tls.credentialName: is served by xdslab to nobody: it keeps no Kubernetes secrets, so the gateway's SDS request for \"kubernetes://cert\" gets nothing"},
		{name: "gw https files generated", kind: istioconfig.KindGateway, spec: "selector: {istio: ingressgateway}\nservers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ['*'], tls: {mode: SIMPLE, serverCertificate: /c.pem, privateKey: /k.pem}}]"},
		{name: "gw tls istio mutual generated", kind: istioconfig.KindGateway, spec: "selector: {istio: ingressgateway}\nservers: [{port: {number: 15443, name: tls, protocol: TLS}, hosts: ['*'], tls: {mode: ISTIO_MUTUAL}}]"},
		{name: "gw tls credential not served", kind: istioconfig.KindGateway, spec: "selector: {istio: ingressgateway}\nservers: [{port: {number: 9443, name: tls, protocol: TLS}, hosts: ['*'], tls: {mode: MUTUAL, credentialName: db-cert}}]", warn: "spec.servers[0].tls.credentialName: is served by xdslab to nobody"},
		{name: "gw auto passthrough generated", kind: istioconfig.KindGateway, spec: "selector: {istio: ingressgateway}\nservers: [{port: {number: 15443, name: tls, protocol: TLS}, hosts: ['*.local'], tls: {mode: AUTO_PASSTHROUGH}}]"},
		{name: "gw optional mutual credential not served", kind: istioconfig.KindGateway, spec: "selector: {istio: ingressgateway}\nservers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ['*'], tls: {mode: OPTIONAL_MUTUAL, credentialName: cert}}]", warn: "spec.servers[0].tls.credentialName: is served by xdslab to nobody"},
		{name: "gw builtin credential from the agent", kind: istioconfig.KindGateway, spec: "selector: {istio: ingressgateway}\nservers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ['*'], tls: {mode: MUTUAL, credentialName: 'builtin://'}}]"},
		{name: "gw builtin credentials with a builtin CA", kind: istioconfig.KindGateway, spec: "selector: {istio: ingressgateway}\nservers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ['*'], tls: {mode: MUTUAL, credentialNames: ['builtin://', 'builtin://'], caCertCredentialName: 'builtin://-cacert'}}]"},
		{name: "gw builtin credential with a secret CA", kind: istioconfig.KindGateway, spec: "selector: {istio: ingressgateway}\nservers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ['*'], tls: {mode: MUTUAL, credentialName: 'builtin://', caCertCredentialName: clients}}]", warn: "spec.servers[0].tls.credentialName: is served by xdslab to nobody: it keeps no Kubernetes secrets, so the gateway's SDS request for \"kubernetes://clients\""},
		{name: "gw builtin credential with a name", kind: istioconfig.KindGateway, spec: "selector: {istio: ingressgateway}\nservers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ['*'], tls: {mode: SIMPLE, credentialName: 'builtin://shop'}}]", warn: "spec.servers[0].tls.credentialName: \"builtin://shop\" names the workload certificate under another name than \"builtin://\""},
		{name: "gw external sds credential", kind: istioconfig.KindGateway, spec: "selector: {istio: ingressgateway}\nservers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ['*'], tls: {mode: SIMPLE, credentialNames: ['builtin://', 'sds://vault-cert']}}]", warn: "spec.servers[0].tls.credentialNames: \"sds://vault-cert\" is asked for as \"kubernetes://vault-cert\" over ADS"},
		{name: "gw configmap credential", kind: istioconfig.KindGateway, spec: "selector: {istio: ingressgateway}\nservers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ['*'], tls: {mode: SIMPLE, credentialName: 'configmap://ns1/shop'}}]", warn: "spec.servers[0].tls.credentialName: is served by xdslab to nobody: it keeps no Kubernetes secrets, so the gateway's SDS request for \"configmap://ns1/shop\""},
		{name: "gw unknown cipher suite", kind: istioconfig.KindGateway, spec: "selector: {istio: ingressgateway}\nservers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ['*'], tls: {mode: SIMPLE, serverCertificate: /c.pem, privateKey: /k.pem, cipherSuites: [ECDHE-RSA-AES128-GCM-SHA256, ecdhe-rsa-aes256-gcm-sha384]}}]", warn: "spec.servers[0].tls.cipherSuites[1]: \"ecdhe-rsa-aes256-gcm-sha384\" is not a cipher suite Envoy knows: it is left out, as istiod leaves it out (Envoy would reject the listener) (did you mean \"ECDHE-RSA-AES256-GCM-SHA384\"?)"},
		{name: "gw repeated cipher suite", kind: istioconfig.KindGateway, spec: "selector: {istio: ingressgateway}\nservers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ['*'], tls: {mode: SIMPLE, serverCertificate: /c.pem, privateKey: /k.pem, cipherSuites: [AES128-SHA, '[AES256-SHA|AES128-SHA]', AES128-SHA]}}]", warn: "spec.servers[0].tls.cipherSuites[2]: \"AES128-SHA\" is listed already"},
		{name: "gw no known cipher suite", kind: istioconfig.KindGateway, spec: "selector: {istio: ingressgateway}\nservers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ['*'], tls: {mode: PASSTHROUGH, cipherSuites: []}}]"},
		{name: "gw old tls without cipher suites", kind: istioconfig.KindGateway, spec: "selector: {istio: ingressgateway}\nservers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ['*'], tls: {mode: SIMPLE, serverCertificate: /c.pem, privateKey: /k.pem, minProtocolVersion: TLSV1_1}}]", warn: "spec.servers[0].tls.minProtocolVersion: TLSV1_1: Envoy's default cipher suites need TLS 1.2"},
		{name: "gw old tls with cipher suites", kind: istioconfig.KindGateway, spec: "selector: {istio: ingressgateway}\nservers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ['*'], tls: {mode: SIMPLE, serverCertificate: /c.pem, privateKey: /k.pem, minProtocolVersion: TLSV1_0, cipherSuites: [AES128-SHA]}}]"},
		{name: "gw bind address", kind: istioconfig.KindGateway, spec: "selector: {istio: ingressgateway}\nservers: [{port: {number: 8080, name: http, protocol: HTTP}, bind: 10.0.0.5, hosts: ['*']}]"},
		{name: "gw unix bind not generated", kind: istioconfig.KindGateway, spec: "selector: {istio: ingressgateway}\nservers: [{port: {number: 8080, name: http, protocol: HTTP}, bind: 'unix:///run/gw.sock', hosts: ['*']}]", warn: "spec.servers[0].bind: a unix socket is not generated by xdslab"},
		{name: "gw ok", kind: istioconfig.KindGateway, spec: "selector: {istio: ingressgateway}\nservers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ['ns1/*.example.com']}]"},
		{name: "gw no servers", kind: istioconfig.KindGateway, spec: "selector: {istio: ingressgateway}", err: "spec.servers: is required"},
		{name: "gw no hosts", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 80, name: http, protocol: HTTP}}]", err: "spec.servers[0].hosts: is required"},
		{name: "gw no port", kind: istioconfig.KindGateway, spec: "servers: [{hosts: ['*']}]", err: "spec.servers[0].port: is required"},
		{name: "gw no protocol", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 80, name: http}, hosts: ['*']}]", err: "spec.servers[0].port.protocol: is required"},
		{name: "gw bad host", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ['a.*']}]", err: `spec.servers[0].hosts[0]: "a.*" is not a valid host`},
		{name: "gw ~ namespace", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ['~/*']}]", err: `spec.servers[0].hosts[0]: "~/*": "~" (an exclusion) is only allowed in a Sidecar`},
		{name: "gw https without tls", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ['*']}]", err: "spec.servers[0].tls: is required for protocol HTTPS"},
		{name: "gw simple without cert", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ['*'], tls: {mode: SIMPLE, privateKey: /k}}]", err: "spec.servers[0].tls.serverCertificate: mode SIMPLE needs a certificate"},
		{name: "gw https tlsCertificates ok", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ['*'], tls: {mode: SIMPLE, tlsCertificates: [{serverCertificate: /rsa.pem, privateKey: /rsa.key}, {serverCertificate: /ec.pem, privateKey: /ec.key}]}}]"},
		{name: "gw tlsCertificates entry without key", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ['*'], tls: {mode: SIMPLE, tlsCertificates: [{serverCertificate: /rsa.pem}]}}]", err: "spec.servers[0].tls.tlsCertificates[0].privateKey: is required"},
		{name: "gw mutual tlsCertificates without CA", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ['*'], tls: {mode: MUTUAL, tlsCertificates: [{serverCertificate: /c.pem, privateKey: /k.pem}]}}]", err: "spec.servers[0].tls.caCertificates: mode MUTUAL verifies clients"},
		{name: "gw two certificate sources", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ['*'], tls: {mode: SIMPLE, credentialName: cert, serverCertificate: /c.pem, privateKey: /k.pem}}]", err: "spec.servers[0].tls: sets serverCertificate/privateKey and credentialName"},
		{name: "gw two certificate sources tlsCertificates", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ['*'], tls: {mode: SIMPLE, serverCertificate: /c.pem, privateKey: /k.pem, tlsCertificates: [{serverCertificate: /c2.pem, privateKey: /k2.pem}]}}]", err: "spec.servers[0].tls: sets serverCertificate/privateKey and tlsCertificates"},
		{name: "gw istio mutual with credential", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 15443, name: tls, protocol: TLS}, hosts: ['*'], tls: {mode: ISTIO_MUTUAL, credentialName: cert}}]", err: "spec.servers[0].tls.credentialName: mode ISTIO_MUTUAL uses the mesh's certificates"},
		{name: "gw istio mutual with CA", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 15443, name: tls, protocol: TLS}, hosts: ['*'], tls: {mode: ISTIO_MUTUAL, caCertificates: /ca.pem}}]", err: "spec.servers[0].tls.caCertificates: mode ISTIO_MUTUAL uses the mesh's certificates"},
		{name: "gw mutual credential crl", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ['*'], tls: {mode: MUTUAL, credentialName: cert, caCrl: /crl.pem}}]", warn: "spec.servers[0].tls.credentialName: is served by xdslab to nobody"},
		{name: "gw simple credentials crl", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ['*'], tls: {mode: SIMPLE, credentialNames: [a, b], caCrl: /crl.pem}}]", warn: "spec.servers[0].tls.credentialNames: is served by xdslab to nobody"},
		{name: "gw passthrough credential crl", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 443, name: tls, protocol: TLS}, hosts: ['*'], tls: {mode: PASSTHROUGH, credentialName: cert, caCrl: /crl.pem}}]", err: "spec.servers[0].tls.caCrl: cannot be used with credentialName"},
		{name: "gw simple crl", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ['*'], tls: {mode: SIMPLE, serverCertificate: /c.pem, privateKey: /k.pem, caCrl: /crl.pem}}]", err: "spec.servers[0].tls.caCrl: is not supported with mode SIMPLE"},
		{name: "gw passthrough ok", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 443, name: tls, protocol: TLS}, hosts: ['*'], tls: {mode: PASSTHROUGH}}]"},
		{name: "gw https redirect on https", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 443, name: tls, protocol: TLS}, hosts: ['*'], tls: {mode: PASSTHROUGH, httpsRedirect: true}}]", warn: "spec.servers[0].tls.httpsRedirect: redirects plain HTTP clients, and a TLS server has none"},
		{name: "gw https redirect on http2", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 8080, name: h2, protocol: HTTP2}, hosts: ['*'], tls: {httpsRedirect: true}}]"},
		{name: "gw https redirect on grpc-web", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 8080, name: web, protocol: GRPC-WEB}, hosts: ['*'], tls: {httpsRedirect: true}}]"},
		{name: "gw duplicate port name", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ['a.com']}, {port: {number: 8080, name: http, protocol: HTTP}, hosts: ['b.com']}]", err: `spec.servers[1].port.name: port name "http" is used by another server`},
		{name: "gw bind not an ip", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ['*'], bind: localhost}]", err: `spec.servers[0].bind: "localhost" is not an IP address`},
		{name: "gw bind ip ok", kind: istioconfig.KindGateway, spec: "servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ['*'], bind: '::1'}]"},
		{name: "vs host twice", kind: istioconfig.KindVirtualService, spec: "hosts: [a.com, b.com, a.com]\nhttp: [{route: [{destination: {host: a.com}}]}]", err: `spec.hosts[2]: "a.com" overlaps "a.com" (hosts[0])`},
		{name: "vs host under a wildcard", kind: istioconfig.KindVirtualService, spec: "hosts: ['*.example.com', a.example.com]\nhttp: [{route: [{destination: {host: a.com}}]}]", err: `spec.hosts[1]: "a.example.com" overlaps "*.example.com" (hosts[0])`},
		{name: "vs nested wildcards", kind: istioconfig.KindVirtualService, spec: "hosts: ['*.a.example.com', '*.example.com']\nhttp: [{route: [{destination: {host: a.com}}]}]", err: `spec.hosts[1]: "*.example.com" overlaps "*.a.example.com" (hosts[0])`},
		{name: "vs star and a host on a gateway", kind: istioconfig.KindVirtualService, spec: "hosts: [a.com, '*']\ngateways: [gw]\nhttp: [{route: [{destination: {host: a.com}}]}]", err: `spec.hosts[1]: "*" overlaps "a.com" (hosts[0])`},
		{name: "vs disjoint wildcards ok", kind: istioconfig.KindVirtualService, spec: "hosts: ['*.a.com', '*.b.com', a.org, A.org]\nhttp: [{route: [{destination: {host: a.com}}]}]"},
		{name: "dr retry budget alone is a policy", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {retryBudget: {percent: 20, minRetryConcurrency: 3}}"},
		{name: "dr tunnel generated", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {tunnel: {protocol: POST, targetHost: 10.0.0.9, targetPort: 7000}}"},
		{name: "dr tunnel protocol", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {tunnel: {protocol: connect, targetHost: x.example.org, targetPort: 80}}", err: `spec.trafficPolicy.tunnel.protocol: "connect" is not a tunnel protocol`},
		{name: "dr tunnel host", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {tunnel: {targetHost: 'x_y.org', targetPort: 80}}", err: `spec.trafficPolicy.tunnel.targetHost: "x_y.org" is not a fully qualified domain name`},
		{name: "dr tunnel host numeric tld", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {tunnel: {targetHost: 'proxy.123', targetPort: 80}}", err: `spec.trafficPolicy.tunnel.targetHost: "proxy.123" is not a fully qualified domain name: its top-level label "123" is all digits`},
		{name: "dr tunnel host not an ip", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {tunnel: {targetHost: '1.2.3.4.5', targetPort: 80}}", err: `spec.trafficPolicy.tunnel.targetHost: "1.2.3.4.5" is not a fully qualified domain name: its top-level label "5" is all digits`},
		{name: "dr tunnel host trailing dot", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {tunnel: {targetHost: 'proxy.example.org.', targetPort: 80}}"},
		{name: "dr tunnel port", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {tunnel: {targetHost: x.example.org}}", err: "spec.trafficPolicy.tunnel.targetPort: 0 is not a port"},
		{name: "dr tunnel with proxy protocol", kind: istioconfig.KindDestinationRule, spec: "host: a.com\ntrafficPolicy: {proxyProtocol: {version: V1}, tunnel: {protocol: CONNECT, targetHost: x, targetPort: 80}}", err: "spec.trafficPolicy.proxyProtocol: cannot be set with tunnel"},
		{name: "vs gateway ref with a dotted name", kind: istioconfig.KindVirtualService, spec: "hosts: [a.com]\ngateways: [ns1/gw.v2]\nhttp: [{route: [{destination: {host: a.com}}]}]", err: `spec.gateways[0]: "ns1/gw.v2" names Gateway "gw.v2", which cannot exist`},
		{name: "vs gateway ref after mesh is not checked by istiod", kind: istioconfig.KindVirtualService, spec: "hosts: [a.com]\ngateways: [mesh, ns1/gw.v2]\nhttp: [{route: [{destination: {host: a.com}}]}]", warn: `spec.gateways[1]: "ns1/gw.v2" names Gateway "gw.v2", which cannot exist`},
		{name: "vs gateway ref before mesh is checked", kind: istioconfig.KindVirtualService, spec: "hosts: [a.com]\ngateways: [ns1/gw.v2, mesh]\nhttp: [{route: [{destination: {host: a.com}}]}]", err: `spec.gateways[0]: "ns1/gw.v2" names Gateway "gw.v2", which cannot exist`},
		{name: "vs gateway ref legacy dotted ok", kind: istioconfig.KindVirtualService, spec: "hosts: [a.com]\ngateways: [gw.ns1]\nhttp: [{route: [{destination: {host: a.com}}]}]"},
		{name: "gw selector wildcard", kind: istioconfig.KindGateway, spec: "selector: {'*': x}\nservers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ['*']}]", err: `spec.selector.*: wildcards are not supported`},
		// AuthorizationPolicy (ValidateAuthorizationPolicy) and what xdslab does not generate
		{name: "ap ok", kind: istioconfig.KindAuthorizationPolicy, spec: "action: ALLOW\nrules: [{from: [{source: {principals: [cluster.local/ns/a/sa/b], notIpBlocks: [10.0.0.0/8]}}], to: [{operation: {methods: [GET], paths: ['/a*'], ports: ['80']}}], when: [{key: 'request.headers[x-user]', values: [a]}, {key: source.ip, notValues: [10.1.0.1]}]}]"},
		{name: "ap allow nothing ok", kind: istioconfig.KindAuthorizationPolicy, spec: "{}"},
		{name: "ap when trust domain with a slash ok", kind: istioconfig.KindAuthorizationPolicy, spec: "rules: [{when: [{key: source.trustDomain, values: ['td/x']}]}]"},
		{name: "ap from trust domain with a slash", kind: istioconfig.KindAuthorizationPolicy, spec: "rules: [{from: [{source: {trustDomains: ['td/x']}}]}]", err: "spec.rules[0].from[0].source.trustDomains[0]: \"td/x\": a trust domain has no"},
		{name: "ap selector and targetRef", kind: istioconfig.KindAuthorizationPolicy, spec: "selector: {matchLabels: {app: a}}\ntargetRef: {kind: Service, name: a}", err: "spec.targetRef: only one of selector or targetRef(s)"},
		{name: "ap targetRefs not generated", kind: istioconfig.KindAuthorizationPolicy, spec: "targetRefs: [{kind: Service, name: a}]\nrules: [{}]", warn: "spec.targetRefs: are not generated by xdslab"},
		{name: "ap targetRef without name", kind: istioconfig.KindAuthorizationPolicy, spec: "targetRef: {kind: Service}\nrules: [{}]", err: "spec.targetRef.name: is required"},
		{name: "ap targetRefs of another kind", kind: istioconfig.KindAuthorizationPolicy, spec: "targetRefs: [{kind: Gateway, group: gateway.networking.k8s.io, name: g}, {kind: Deployment, group: apps, name: d}]\nrules: [{}]", err: "spec.targetRefs[1].kind: apps/Deployment is not a kind a policy can target"},
		{name: "ra targetRef across namespaces", kind: istioconfig.KindRequestAuthentication, spec: "targetRefs: [{kind: ServiceEntry, group: networking.istio.io, name: s, namespace: other}]", err: "spec.targetRefs[0].namespace: must not be set"},
		{name: "ap service account wildcard", kind: istioconfig.KindAuthorizationPolicy, spec: "rules: [{from: [{source: {serviceAccounts: [ns1/app, 'ns1/app-*']}}]}]", err: `spec.rules[0].from[0].source.serviceAccounts[1]: "ns1/app-*": wildcards are not allowed`},
		{name: "ap trust domain with a slash", kind: istioconfig.KindAuthorizationPolicy, spec: "rules: [{from: [{source: {notTrustDomains: [td.example, td/ns]}}]}]", err: `spec.rules[0].from[0].source.notTrustDomains[1]: "td/ns": a trust domain has no '/'`},
		{name: "ap deny without rules", kind: istioconfig.KindAuthorizationPolicy, spec: "action: DENY", err: "spec.rules: a DENY policy without rules never triggers"},
		{name: "ap provider without custom", kind: istioconfig.KindAuthorizationPolicy, spec: "provider: {name: ext}\nrules: [{}]", err: "spec.provider: must not be set with action ALLOW"},
		{name: "ap custom denies", kind: istioconfig.KindAuthorizationPolicy, spec: "action: CUSTOM\nprovider: {name: ext}\nrules: [{to: [{operation: {paths: [/x]}}]}]", warn: "spec.provider.name: \"ext\" is not an extension provider of the mesh config"},
		{name: "ap custom without provider", kind: istioconfig.KindAuthorizationPolicy, spec: "action: CUSTOM\nrules: [{}]", err: "spec.provider.name: must not be empty"},
		{name: "ap custom with principals", kind: istioconfig.KindAuthorizationPolicy, spec: "action: CUSTOM\nprovider: {name: ext}\nrules: [{from: [{source: {principals: [a]}}]}]", err: "spec.rules[0].from[0].source.principals: is not supported with action CUSTOM"},
		{name: "ap empty source", kind: istioconfig.KindAuthorizationPolicy, spec: "rules: [{from: [{source: {}}]}]", err: "spec.rules[0].from[0].source: must not be empty"},
		{name: "ap empty operation", kind: istioconfig.KindAuthorizationPolicy, spec: "rules: [{to: [{operation: {}}]}]", err: "spec.rules[0].to[0].operation: must not be empty"},
		{name: "ap empty value", kind: istioconfig.KindAuthorizationPolicy, spec: "rules: [{to: [{operation: {methods: ['']}}]}]", err: "spec.rules[0].to[0].operation.methods[0]: an empty value is not allowed"},
		{name: "ap bad ip", kind: istioconfig.KindAuthorizationPolicy, spec: "rules: [{from: [{source: {ipBlocks: [10.0.0.300]}}]}]", err: `spec.rules[0].from[0].source.ipBlocks[0]: "10.0.0.300" is not an IP`},
		{name: "ap bad port", kind: istioconfig.KindAuthorizationPolicy, spec: "rules: [{to: [{operation: {ports: ['70000']}}]}]", err: `spec.rules[0].to[0].operation.ports[0]: "70000" is not a port`},
		{name: "ap sa with namespaces", kind: istioconfig.KindAuthorizationPolicy, spec: "rules: [{from: [{source: {namespaces: [a], serviceAccounts: [b]}}]}]", err: "spec.rules[0].from[0].source.serviceAccounts: cannot be set with namespaces or principals"},
		{name: "ap unknown key", kind: istioconfig.KindAuthorizationPolicy, spec: "rules: [{when: [{key: request.color, values: [red]}]}]", err: `spec.rules[0].when[0].key: unknown attribute "request.color"`},
		{name: "ap header key without name", kind: istioconfig.KindAuthorizationPolicy, spec: "rules: [{when: [{key: request.headers, values: [a]}]}]", err: `spec.rules[0].when[0].key: "request.headers" is not of the form request.headers[NAME]`},
		{name: "ap when without values", kind: istioconfig.KindAuthorizationPolicy, spec: "rules: [{when: [{key: source.ip}]}]", err: "spec.rules[0].when[0]: at least one of values or notValues"},
		{name: "ap bad path template", kind: istioconfig.KindAuthorizationPolicy, spec: "rules: [{to: [{operation: {paths: ['/a/{x}']}}]}]", err: `spec.rules[0].to[0].operation.paths[0]: path "/a/{x}" has '{' or '}'`},
		{name: "ap path template not generated", kind: istioconfig.KindAuthorizationPolicy, spec: "rules: [{to: [{operation: {paths: ['/a/{*}/b']}}]}]", warn: `spec.rules[0].to[0].operation.paths[0]: path template "/a/{*}/b" is not generated by xdslab`},
		{name: "ap claims ok", kind: istioconfig.KindAuthorizationPolicy, spec: "rules: [{when: [{key: 'request.auth.claims[iss]', values: [a]}], from: [{source: {requestPrincipals: ['*']}}]}]"},
		{name: "ap experimental not generated", kind: istioconfig.KindAuthorizationPolicy, spec: "rules: [{when: [{key: 'experimental.envoy.filters.a[b]', values: [c]}]}]", warn: "spec.rules[0].when[0].key: experimental.envoy.filters.a[b] is not generated by xdslab"},
		{name: "ap http-only deny", kind: istioconfig.KindAuthorizationPolicy, spec: "action: DENY\nrules: [{to: [{operation: {paths: [/admin]}}]}]", warn: "spec.rules[0]: uses only HTTP attributes in a DENY rule"},
		{name: "ap deny with port ok", kind: istioconfig.KindAuthorizationPolicy, spec: "action: DENY\nrules: [{to: [{operation: {paths: [/admin], ports: ['80']}}]}]"},
		// RequestAuthentication (ValidateRequestAuthentication) and what xdslab does not generate
		{name: "ra ok", kind: istioconfig.KindRequestAuthentication, spec: "selector: {matchLabels: {app: a}}\njwtRules:\n- issuer: https://i.example.com\n  audiences: [a]\n  jwks: '" + testJWKS + "'\n  fromHeaders: [{name: x-jwt, prefix: 'Bearer '}]\n  fromParams: [t]\n  fromCookies: [c]\n  outputClaimToHeaders: [{header: x-sub, claim: sub}]\n  timeout: 3s"},
		{name: "ra single key ok", kind: istioconfig.KindRequestAuthentication, spec: `jwtRules: [{issuer: i, jwks: '{"kty":"RSA","e":"AQAB","n":"AQAB"}'}]`},
		{name: "ra empty ok", kind: istioconfig.KindRequestAuthentication, spec: "{}"},
		{name: "ra selector and targetRef", kind: istioconfig.KindRequestAuthentication, spec: "selector: {matchLabels: {app: a}}\ntargetRef: {kind: Service, name: a}", err: "spec.targetRefs: only one of selector, targetRef or targetRefs"},
		{name: "ra targetRefs not generated", kind: istioconfig.KindRequestAuthentication, spec: "targetRefs: [{kind: Service, name: a}]", warn: "spec.targetRefs: are not generated by xdslab"},
		{name: "ra no issuer", kind: istioconfig.KindRequestAuthentication, spec: "jwtRules: [{audiences: [a]}]", err: "spec.jwtRules[0].issuer: issuer or jwksUri must be set"},
		{name: "ra empty audience", kind: istioconfig.KindRequestAuthentication, spec: "jwtRules: [{issuer: i, audiences: ['']}]", err: "spec.jwtRules[0].audiences[0]: an audience must not be empty"},
		{name: "ra bad jwksUri", kind: istioconfig.KindRequestAuthentication, spec: "jwtRules: [{issuer: i, jwksUri: 'ftp://k.example.com/keys'}]", err: `spec.jwtRules[0].jwksUri: jwksUri "ftp://k.example.com/keys" has scheme "ftp"`},
		{name: "ra jwksUri fetched by envoy", kind: istioconfig.KindRequestAuthentication, spec: "jwtRules: [{issuer: i, jwksUri: 'https://k.example.com:8443/keys'}]", warn: "spec.jwtRules[0].jwksUri: fetching the keys in the control plane is not generated by xdslab: istiod fetches them and inlines local_jwks, xdslab generates remote_jwks for Envoy to fetch through cluster outbound|8443||k.example.com"},
		{name: "ra discovery not generated", kind: istioconfig.KindRequestAuthentication, spec: "jwtRules: [{issuer: https://i.example.com}]", warn: "spec.jwtRules[0].issuer: discovering the keys over OpenID Connect is not generated by xdslab"},
		{name: "ra bad jwks", kind: istioconfig.KindRequestAuthentication, spec: "jwtRules: [{issuer: i, jwks: 'not json'}]", err: "spec.jwtRules[0].jwks: is not a JSON Web Key Set"},
		{name: "ra private key", kind: istioconfig.KindRequestAuthentication, spec: `jwtRules: [{issuer: i, jwks: '{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}'}]`, warn: "spec.jwtRules[0].jwks: key at index 0 contains private key material"},
		{name: "ra empty header", kind: istioconfig.KindRequestAuthentication, spec: "jwtRules: [{issuer: i, jwks: '" + testJWKS + "', fromHeaders: [{prefix: x}]}]", err: "spec.jwtRules[0].fromHeaders[0].name: must not be empty"},
		{name: "ra header with newline", kind: istioconfig.KindRequestAuthentication, spec: "jwtRules: [{issuer: i, outputPayloadToHeader: \"x\\ny\"}]", err: `spec.jwtRules[0].outputPayloadToHeader: "x\ny" contains NUL, CR or LF`},
		{name: "ra empty param", kind: istioconfig.KindRequestAuthentication, spec: "jwtRules: [{issuer: i, jwks: '" + testJWKS + "', fromParams: ['']}]", err: "spec.jwtRules[0].fromParams[0]: must not be empty"},
		{name: "ra empty cookie", kind: istioconfig.KindRequestAuthentication, spec: "jwtRules: [{issuer: i, jwks: '" + testJWKS + "', fromCookies: ['']}]", err: "spec.jwtRules[0].fromCookies[0]: must not be empty"},
		{name: "ra claim without header", kind: istioconfig.KindRequestAuthentication, spec: "jwtRules: [{issuer: i, jwks: '" + testJWKS + "', outputClaimToHeaders: [{claim: sub}]}]", err: "spec.jwtRules[0].outputClaimToHeaders[0]: header and claim must both be set"},
		{name: "ra bad claim header", kind: istioconfig.KindRequestAuthentication, spec: "jwtRules: [{issuer: i, jwks: '" + testJWKS + "', outputClaimToHeaders: [{claim: sub, header: 'x:sub'}]}]", err: `spec.jwtRules[0].outputClaimToHeaders[0].header: "x:sub" is not a valid header name`},
		{name: "ra bad timeout", kind: istioconfig.KindRequestAuthentication, spec: "jwtRules: [{issuer: i, jwks: '" + testJWKS + "', timeout: 0.5ms}]", err: "spec.jwtRules[0].timeout:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := "apiVersion: " + istioconfig.KindAPIVersions(tc.kind)[0] + "\nkind: " + string(tc.kind) + "\nmetadata: {name: x}\nspec:\n  " +
				strings.ReplaceAll(tc.spec, "\n", "\n  ") + "\n"
			res, err := config.Decoder{}.DecodeAll("t.yaml", []byte(doc))
			var errs []string
			if err != nil {
				for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
					var de *config.DecodeError
					if !errors.As(e, &de) {
						t.Fatalf("%v is not a *DecodeError", e)
					}
					if de.Line < 4 {
						t.Errorf("%v: line %d is not in the spec", de, de.Line)
					}
					errs = append(errs, de.Msg)
				}
			}
			check := func(what string, got []string, want string) {
				t.Helper()
				if want == "" {
					if len(got) > 0 {
						t.Errorf("%s: got %q, want none", what, got)
					}
					return
				}
				if len(got) != 1 || !strings.HasPrefix(got[0], want) {
					t.Errorf("%s:\n got %q\nwant one starting %q", what, got, want)
				}
			}
			check("errors", errs, tc.err)
			var warns []string
			for _, w := range res.Warnings {
				warns = append(warns, w.Msg)
			}
			check("warnings", warns, tc.warn)
			if (len(res.Configs) == 1) != (tc.err == "") {
				t.Errorf("%d configs decoded; an invalid object must contribute none, a valid one itself", len(res.Configs))
			}
		})
	}
}

// TestValidateSpecAPI checks the exported entry point on a config built in code.
func TestValidateSpecAPI(t *testing.T) {
	cfg := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindServiceEntry, Name: "a", Namespace: "default"},
		Spec: &networking.ServiceEntry{Hosts: []string{"", "*web.com"}}}
	warns, err := validate.Spec(cfg)
	var se *validate.SpecError
	if !errors.As(err, &se) || se.Path != "spec.hosts[0]" {
		t.Fatalf("err = %v, want a *SpecError at spec.hosts[0]", err)
	}
	if len(warns) != 1 || warns[0].Path != "spec.hosts[1]" {
		t.Errorf("warnings = %v", warns)
	}
	cfg.Spec = &networking.ServiceEntry{Hosts: []string{"a.com"}}
	if warns, err := validate.Spec(cfg); err != nil || len(warns) != 0 {
		t.Errorf("valid spec: %v %v", warns, err)
	}
}

// TestInvalidCorpus decodes every file of testdata/invalid and compares the messages (errors,
// warnings and skipped documents) with the file's .golden (run with -update to rewrite).
func TestInvalidCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			res, err := config.Decoder{}.DecodeAll(f, data)
			if err == nil {
				t.Fatalf("%s decoded without errors: every corpus file must hold at least one invalid object", f)
			}
			var b strings.Builder
			b.WriteString("# errors\n" + err.Error() + "\n")
			if len(res.Warnings) > 0 {
				b.WriteString("# warnings\n")
				for _, w := range res.Warnings {
					b.WriteString(w.Error() + "\n")
				}
			}
			if len(res.Skipped) > 0 {
				b.WriteString("# skipped\n")
				for _, s := range res.Skipped {
					b.WriteString(s.String() + "\n")
				}
			}
			b.WriteString("# decoded\n")
			for _, c := range res.Configs {
				b.WriteString(c.Key().String() + "\n")
			}
			golden.Check(t, filepath.Join("testdata", "invalid", strings.TrimSuffix(filepath.Base(f), ".yaml")+".golden"), []byte(b.String()))
		})
	}
}

// FuzzValidateSpec feeds arbitrary specs (as protobuf wire bytes, so every field and value is
// reachable) of every kind to the validator: it must never panic, and must be deterministic.
func FuzzValidateSpec(f *testing.F) {
	kinds := istioconfig.Kinds()
	for i, k := range kinds {
		spec, _ := istioconfig.NewSpec(k)
		b, _ := proto.Marshal(spec)
		f.Add(uint8(i), b)
	}
	seed := &networking.ServiceEntry{Hosts: []string{"*.a.com", "*"}, Addresses: []string{"10.0.0.0/8"},
		Ports:      []*networking.ServicePort{{Number: 0, Name: "Bad_Name"}, {Number: 0}},
		Resolution: networking.ServiceEntry_DNS, Endpoints: []*networking.WorkloadEntry{{Address: "unix://x", Ports: map[string]uint32{"a": 99999}}}}
	b, _ := proto.Marshal(seed)
	f.Add(uint8(0), b)
	vs := &networking.VirtualService{Hosts: []string{"*"}, Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Weight: -5}, {Destination: &networking.Destination{Host: "*"}}}}}}
	b, _ = proto.Marshal(vs)
	f.Add(uint8(2), b)
	// string matches, CORS and header values (matches.go, headervalue.go)
	vs = &networking.VirtualService{Hosts: []string{"r"}, Http: []*networking.HTTPRoute{{
		Match: []*networking.HTTPMatchRequest{{
			Uri:            &networking.StringMatch{MatchType: &networking.StringMatch_Regex{Regex: "/a(?=b)"}},
			Headers:        map[string]*networking.StringMatch{"x a": {MatchType: &networking.StringMatch_Prefix{}}, "@request.auth.claims[": {}},
			WithoutHeaders: map[string]*networking.StringMatch{"x": {MatchType: &networking.StringMatch_Regex{Regex: "*"}}},
			QueryParams:    map[string]*networking.StringMatch{"q": {MatchType: &networking.StringMatch_Regex{Regex: strings.Repeat("a", 1025)}}},
		}},
		CorsPolicy: &networking.CorsPolicy{AllowOrigins: []*networking.StringMatch{{}, {MatchType: &networking.StringMatch_Regex{Regex: "(a|b"}}},
			AllowMethods: []string{"get"}, AllowHeaders: []string{"", "*", "x y"}, MaxAge: &durationpb.Duration{Seconds: 1, Nanos: 5e8}},
		Headers: &networking.Headers{Request: &networking.Headers_HeaderOperations{Set: map[string]string{"a": "100%", "b": `%A(["x" ,"y"] )%`, "c": `%A("\`}}},
		Route:   []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "r"}}},
	}}}
	b, _ = proto.Marshal(vs)
	f.Add(uint8(2), b)
	idx := func(k istioconfig.Kind) uint8 { return uint8(slices.Index(kinds, k)) }
	dr := &networking.DestinationRule{Host: "a", TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{
		LocalityLbSetting: &networking.LocalityLoadBalancerSetting{Distribute: []*networking.LocalityLoadBalancerSetting_Distribute{
			{From: "r/*", To: map[string]uint32{"r/z": 60, "r/*": 40, "": 0}}, {From: "*/x"}},
			Failover: []*networking.LocalityLoadBalancerSetting_Failover{{From: "r", To: "r/z"}}, FailoverPriority: []string{"topology.istio.io/subzone"}}},
		ConnectionPool: &networking.ConnectionPoolSettings{Http: &networking.ConnectionPoolSettings_HTTPSettings{Http2KeepAlive: &networking.ConnectionPoolSettings_HTTPSettings_ConnectionKeepalive{}}}}}
	b, _ = proto.Marshal(dr)
	f.Add(idx(istioconfig.KindDestinationRule), b)
	dr = &networking.DestinationRule{Host: "a", TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{
		LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: &networking.LoadBalancerSettings_ConsistentHashLB{
			MinimumRingSize: 10, HashAlgorithm: &networking.LoadBalancerSettings_ConsistentHashLB_Maglev{Maglev: &networking.LoadBalancerSettings_ConsistentHashLB_MagLev{TableSize: 1000}}}},
		Warmup: &networking.WarmupConfiguration{}}}}
	b, _ = proto.Marshal(dr)
	f.Add(idx(istioconfig.KindDestinationRule), b)
	gw := &networking.Gateway{Servers: []*networking.Server{{Port: &networking.Port{Number: 443, Name: "https", Protocol: "HTTPS"}, Hosts: []string{"*"},
		Tls: &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_MUTUAL, CredentialNames: []string{"a", "b"}}}}}
	b, _ = proto.Marshal(gw)
	f.Add(idx(istioconfig.KindGateway), b)
	ap := &securityapi.AuthorizationPolicy{Action: securityapi.AuthorizationPolicy_DENY, Rules: []*securityapi.Rule{
		{From: []*securityapi.Rule_From{{Source: &securityapi.Source{Principals: []string{"*/ns/a/sa/*"}, IpBlocks: []string{"10.0.0.0/33"}, ServiceAccounts: []string{"a/b/c"}}}, {}},
			To:   []*securityapi.Rule_To{{Operation: &securityapi.Operation{Paths: []string{"/a/{**}/{*}", "/{x}"}, Ports: []string{"99999"}}}},
			When: []*securityapi.Condition{{Key: "request.headers[", Values: []string{""}}, {Key: "request.auth.claims[a][b]"}, {Key: "experimental.envoy.filters.x[y]", NotValues: []string{"z"}}}},
		nil,
	}}
	b, _ = proto.Marshal(ap)
	f.Add(idx(istioconfig.KindAuthorizationPolicy), b)
	ra := &securityapi.RequestAuthentication{TargetRefs: []*typeapi.PolicyTargetReference{{Kind: "Service", Name: "a"}}, JwtRules: []*securityapi.JWTRule{
		{Issuer: "", Audiences: []string{""}, JwksUri: "ftp://a:b/c", Jwks: `{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`,
			FromHeaders: []*securityapi.JWTHeader{nil, {Prefix: "x"}}, FromParams: []string{""}, FromCookies: []string{""},
			OutputClaimToHeaders: []*securityapi.ClaimToHeader{nil, {Claim: "sub"}, {Claim: "sub", Header: "x:y"}}, Timeout: &durationpb.Duration{Nanos: 1}},
		{Issuer: "https://i.example.com/"}, {JwksUri: "https://k.example.com:99999/keys"}, {Issuer: "i", Jwks: "[1]"}, nil,
	}}
	b, _ = proto.Marshal(ra)
	f.Add(idx(istioconfig.KindRequestAuthentication), b)
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		k := kinds[int(kind)%len(kinds)]
		spec, _ := istioconfig.NewSpec(k)
		if err := proto.Unmarshal(data, spec); err != nil {
			return
		}
		cfg := &istioconfig.Config{Meta: istioconfig.Meta{Kind: k, Name: "x", Namespace: "default"}, Spec: spec}
		w1, e1 := validate.Spec(cfg)
		w2, e2 := validate.Spec(cfg)
		if len(w1) != len(w2) || (e1 == nil) != (e2 == nil) || (e1 != nil && e1.Error() != e2.Error()) {
			t.Fatalf("not deterministic: %v %v / %v %v", w1, e1, w2, e2)
		}
	})
}

// testJWKS is a JSON Web Key Set with one public RSA key (its private key was discarded).
const testJWKS = `{"keys":[{"kty":"RSA","e":"AQAB","n":"13XyPgifN-Ol4E0xnK8ldLNo6kVhbppspPLbdQpOO4fcnEgdFJ6smkKkfs8wBM9D6JYJwSKBMR054lanhtGiu28HhRA6ShoZTXhG82zSdSBmPIX48W0CwgARy990a0Adp0sbAi5V_IpCa8Zex3rVAHPWLqBgeuVY74qGhBvrsaimsom9VEXMgGFkRvoc8hdyBOJTV6S4F11KiXnSQyuTo_AcXoTUkF3BJZu9AGguDhVcl0WR-240uk2A1qpV_nPp5WNRzOjOomeo2Awf4g9hlwrMgzyZ6pj6T4HVy4Y6y-jgTcI5hCYOilogpjJgAAWvRh5qycU5fiC--TrJwES2-Q"}]}`

// TestDryRunAnnotation: as istiod's validateMetadata, istio.io/dry-run is an error on another
// kind, on an AuthorizationPolicy whose action is neither ALLOW nor DENY, and with a value
// that is no boolean; ALLOW and DENY with "true", "false", "1" … are valid.
func TestDryRunAnnotation(t *testing.T) {
	ap := func(action securityapi.AuthorizationPolicy_Action, v string) *istioconfig.Config {
		return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindAuthorizationPolicy, Name: "a", Namespace: "default",
			Annotations: map[string]string{"istio.io/dry-run": v}}, Spec: &securityapi.AuthorizationPolicy{Action: action, Rules: []*securityapi.Rule{{}}}}
	}
	pa := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindPeerAuthentication, Name: "a", Namespace: "default",
		Annotations: map[string]string{"istio.io/dry-run": "true"}}, Spec: &securityapi.PeerAuthentication{}}
	for _, tc := range []struct {
		cfg   *istioconfig.Config
		valid bool
	}{
		{ap(securityapi.AuthorizationPolicy_ALLOW, "true"), true},
		{ap(securityapi.AuthorizationPolicy_DENY, "false"), true},
		{ap(securityapi.AuthorizationPolicy_DENY, "1"), true},
		{ap(securityapi.AuthorizationPolicy_DENY, "yes"), false},
		{ap(securityapi.AuthorizationPolicy_AUDIT, "true"), false},
		{pa, false},
	} {
		_, err := validate.Spec(tc.cfg)
		var se *validate.SpecError
		if tc.valid != (err == nil) || (err != nil && (!errors.As(err, &se) || se.Path != "metadata.annotations.istio.io/dry-run")) {
			t.Errorf("%s %v %q: err = %v, want valid %v (at metadata.annotations.istio.io/dry-run)", tc.cfg.Kind, tc.cfg.Spec, tc.cfg.Annotations["istio.io/dry-run"], err, tc.valid)
		}
	}
}
