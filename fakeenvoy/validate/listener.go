package validate

import (
	"fmt"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/proto"
)

// BindKey is the address a listener binds ("" when it does not bind: bind_to_port false, an
// api_listener). A pipe (a unix domain socket, "@" first for an abstract one) is its path:
// Envoy refuses a second listener on a socket another one binds as on an address and port.
func BindKey(l *listenerv3.Listener) string {
	if b := l.GetBindToPort(); b != nil && !b.GetValue() {
		return ""
	}
	if p := l.GetAddress().GetPipe(); p != nil {
		return "pipe:" + p.GetPath()
	}
	sa := l.GetAddress().GetSocketAddress()
	if sa == nil {
		return ""
	}
	return fmt.Sprintf("%s:%s:%d", sa.GetProtocol(), sa.GetAddress(), sa.GetPortValue())
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
