package validate

import (
	"fmt"
	"net/netip"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/proto"
)

// AddressKeys are the addresses a listener takes (its address, then its additional
// addresses), as Envoy compares them for "has duplicate address" between two listeners: a
// socket address as protocol, IP and port, a pipe (a unix domain socket, "@" first for an
// abstract one) as its path. Envoy compares them whether or not the listeners bind their
// ports, but for a port 0 a binding listener takes (the kernel picks one). An IP is compared
// as an address, not as written ("::0" is "::"); an api_listener has none.
func AddressKeys(l *listenerv3.Listener) []string {
	binds := l.GetBindToPort() == nil || l.GetBindToPort().GetValue()
	var keys []string
	add := func(a *corev3.Address) {
		if p := a.GetPipe(); p != nil {
			keys = append(keys, "pipe:"+p.GetPath())
			return
		}
		sa := a.GetSocketAddress()
		if sa == nil || sa.GetPortValue() == 0 && binds {
			return
		}
		ip := sa.GetAddress()
		if a, err := netip.ParseAddr(ip); err == nil {
			ip = a.String()
		}
		keys = append(keys, fmt.Sprintf("%s:%s:%d", sa.GetProtocol(), ip, sa.GetPortValue()))
	}
	if a := l.GetAddress(); a != nil {
		add(a)
	}
	for _, a := range l.GetAdditionalAddresses() {
		add(a.GetAddress())
	}
	return keys
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
