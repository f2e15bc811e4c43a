package istioconfig

import "strings"

// Istio's protocol names, as its ServiceEntry ports spell them (matched without case).
var protocolNames = []string{"HTTP", "HTTP2", "HTTPS", "GRPC", "GRPC-Web", "TCP", "TLS", "Mongo", "MySQL", "Redis", "UDP"}

// ProtocolNames lists Istio's protocol names as ParseProtocolName spells them (a fresh slice).
func ProtocolNames() []string { return append([]string(nil), protocolNames...) }

// ParseProtocolName returns Istio's spelling of the protocol name s (any case), or "" when
// Istio does not know it: a port of such a protocol has its protocol selected automatically
// (sniffed).
func ParseProtocolName(s string) string {
	for _, p := range protocolNames {
		if strings.EqualFold(p, s) {
			return p
		}
	}
	return ""
}

// wellKnownTCPPorts are the ports Istio takes as TCP when nothing names their protocol (SMTP,
// DNS, MySQL, MongoDB): sniffing would break their servers, which speak first.
var wellKnownTCPPorts = map[int32]bool{25: true, 53: true, 3306: true, 27017: true}

// KubePortProtocol is the protocol Istio gives a Kubernetes Service port (its name as
// ParseProtocolName spells it), or "" when Istio selects it automatically (sniffs). udp says the
// port's L4 protocol is UDP, which decides alone. Else the appProtocol decides when it is set
// (Kubernetes' kubernetes.io/h2c, ws and wss are HTTP2, HTTP and HTTPS), else the port name; of
// either, a "grpc-web" prefix is GRPC-Web and otherwise what comes before the first '-' is read
// as a protocol name. A port that nothing names is TCP on a well-known port and sniffed on any
// other. An appProtocol Istio does not know does not fall back to the port name.
func KubePortProtocol(port int32, name string, appProtocol *string, udp bool) string {
	if udp {
		return "UDP"
	}
	if appProtocol != nil {
		name = *appProtocol
		switch name {
		case "kubernetes.io/h2c":
			return "HTTP2"
		case "kubernetes.io/ws":
			return "HTTP"
		case "kubernetes.io/wss":
			return "HTTPS"
		}
	}
	const grpcWeb = "grpc-web"
	if len(name) >= len(grpcWeb) && strings.EqualFold(name[:len(grpcWeb)], grpcWeb) {
		return "GRPC-Web"
	}
	prefix, _, _ := strings.Cut(name, "-")
	if p := ParseProtocolName(prefix); p != "" {
		return p
	}
	if wellKnownTCPPorts[port] {
		return "TCP"
	}
	return ""
}
