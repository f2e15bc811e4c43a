package validate

import (
	"fmt"
	"net/netip"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/proto"
)

// ListenerAddress is one address a listener takes, as Envoy compares them for "has duplicate
// address" between two listeners.
type ListenerAddress struct {
	// Key is the address as Envoy prints it: IP and port ("0.0.0.0:80", "[::]:80"; an IP is
	// compared as an address, not as written: "::0" is "::"), "udp://" first for UDP, and
	// "pipe:PATH" for a unix domain socket ("@" first for an abstract one).
	Key string
	// PortZero: an IP address on port 0, which a binding listener takes from the kernel:
	// Envoy compares a new listener's port-0 address only with existing listeners that do not
	// bind.
	PortZero bool
}

// ListenerAddresses are the addresses a listener takes: its address, then its additional
// addresses (none for an api_listener). Envoy compares them whether or not the listeners bind
// their ports (but for port 0, above).
func ListenerAddresses(l *listenerv3.Listener) []ListenerAddress {
	var out []ListenerAddress
	add := func(a *corev3.Address) {
		if p := a.GetPipe(); p != nil {
			out = append(out, ListenerAddress{Key: "pipe:" + p.GetPath()})
			return
		}
		sa := a.GetSocketAddress()
		if sa == nil {
			return
		}
		key := fmt.Sprintf("%s:%d", sa.GetAddress(), sa.GetPortValue())
		if ip, err := netip.ParseAddr(sa.GetAddress()); err == nil {
			key = netip.AddrPortFrom(ip, uint16(sa.GetPortValue())).String()
		}
		if sa.GetProtocol() == corev3.SocketAddress_UDP {
			key = "udp://" + key
		}
		out = append(out, ListenerAddress{Key: key, PortZero: sa.GetPortValue() == 0})
	}
	if a := l.GetAddress(); a != nil {
		add(a)
	}
	for _, a := range l.GetAdditionalAddresses() {
		add(a.GetAddress())
	}
	return out
}

// Binds reports whether a listener binds its addresses (bind_to_port, true when unset).
func Binds(l *listenerv3.Listener) bool {
	return l.GetBindToPort() == nil || l.GetBindToPort().GetValue()
}

// SameSockets reports whether two copies of a listener have the same socket options, as Envoy
// compares them when one replaces the other (transparent, freebind, TCP Fast Open, the socket
// options, and the additional addresses' number and socket options): only then does it hold the
// new copy's addresses against the old one's.
func SameSockets(a, b *listenerv3.Listener) bool {
	opts := func(l *listenerv3.Listener) *listenerv3.Listener {
		o := &listenerv3.Listener{Transparent: l.GetTransparent(), Freebind: l.GetFreebind(),
			TcpFastOpenQueueLength: l.GetTcpFastOpenQueueLength(), SocketOptions: l.GetSocketOptions()}
		for _, aa := range l.GetAdditionalAddresses() {
			o.AdditionalAddresses = append(o.AdditionalAddresses, &listenerv3.AdditionalAddress{SocketOptions: aa.GetSocketOptions()})
		}
		return o
	}
	return proto.Equal(opts(a), opts(b))
}

// DuplicateFilterChain reports two filter chains of l with the same match (Envoy rejects
// "multiple filter chains with the same matching rules").
func DuplicateFilterChain(l *listenerv3.Listener) error {
	seen := make(map[string]string, len(l.GetFilterChains()))
	for i, fc := range l.GetFilterChains() {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(fc.GetFilterChainMatch())
		if err != nil {
			return err
		}
		name := fc.GetName()
		if name == "" {
			name = fmt.Sprintf("#%d", i)
		}
		if other, ok := seen[string(b)]; ok {
			return fmt.Errorf("filter chains %s and %s have the same matching rules", other, name)
		}
		seen[string(b)] = name
	}
	return nil
}
