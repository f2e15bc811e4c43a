package validate

import (
	"slices"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestAddressKeys: a listener takes its socket address or its pipe (a unix domain socket, an
// abstract one too) and its additional addresses, whether or not it binds them (Envoy compares
// both), but for a port 0 a binding listener takes; an IP is compared as an address.
func TestAddressKeys(t *testing.T) {
	sockAt := func(ip string, port uint32) *corev3.Address {
		return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: ip, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port}}}}
	}
	sock := sockAt("127.0.0.1", 3128)
	pipe := func(path string) *corev3.Address {
		return &corev3.Address{Address: &corev3.Address_Pipe{Pipe: &corev3.Pipe{Path: path}}}
	}
	also := func(as ...*corev3.Address) []*listenerv3.AdditionalAddress {
		var out []*listenerv3.AdditionalAddress
		for _, a := range as {
			out = append(out, &listenerv3.AdditionalAddress{Address: a})
		}
		return out
	}
	tests := []struct {
		name string
		l    *listenerv3.Listener
		want []string
	}{
		{"socket", &listenerv3.Listener{Address: sock}, []string{"TCP:127.0.0.1:3128"}},
		{"socket not bound", &listenerv3.Listener{Address: sock, BindToPort: wrapperspb.Bool(false)}, []string{"TCP:127.0.0.1:3128"}},
		{"pipe", &listenerv3.Listener{Address: pipe("/var/run/app.sock")}, []string{"pipe:/var/run/app.sock"}},
		{"abstract pipe", &listenerv3.Listener{Address: pipe("@app")}, []string{"pipe:@app"}},
		{"pipe not bound", &listenerv3.Listener{Address: pipe("/var/run/app.sock"), BindToPort: wrapperspb.Bool(false)}, []string{"pipe:/var/run/app.sock"}},
		{"additional addresses", &listenerv3.Listener{Address: sockAt("0.0.0.0", 80), AdditionalAddresses: also(sockAt("::", 80)), BindToPort: wrapperspb.Bool(false)},
			[]string{"TCP:0.0.0.0:80", "TCP::::80"}},
		{"an IP as an address", &listenerv3.Listener{Address: sockAt("0:0::0", 80), AdditionalAddresses: also(sockAt("::ffff:10.0.0.1", 80))},
			[]string{"TCP::::80", "TCP:::ffff:10.0.0.1:80"}},
		{"port 0 bound", &listenerv3.Listener{Address: sockAt("127.0.0.1", 0), AdditionalAddresses: also(sockAt("::1", 0))}, nil},
		{"port 0 not bound", &listenerv3.Listener{Address: sockAt("127.0.0.1", 0), BindToPort: wrapperspb.Bool(false)}, []string{"TCP:127.0.0.1:0"}},
		{"no address", &listenerv3.Listener{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AddressKeys(tt.l); !slices.Equal(got, tt.want) {
				t.Errorf("AddressKeys = %q, want %q", got, tt.want)
			}
		})
	}
}
