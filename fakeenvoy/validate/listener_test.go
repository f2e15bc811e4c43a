package validate

import (
	"slices"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestListenerAddresses: a listener takes its socket address or its pipe (a unix domain
// socket, an abstract one too) and its additional addresses, whether or not it binds them, as
// Envoy prints them; an IP is compared as an address; port 0 is marked (a binding listener
// takes whatever port the kernel gives).
func TestListenerAddresses(t *testing.T) {
	sockAt := func(ip string, port uint32) *corev3.Address {
		return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: ip, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port}}}}
	}
	sock := sockAt("127.0.0.1", 3128)
	udp := sockAt("10.0.0.1", 53)
	udp.GetSocketAddress().Protocol = corev3.SocketAddress_UDP
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
	key := func(ks ...string) []ListenerAddress {
		var out []ListenerAddress
		for _, k := range ks {
			out = append(out, ListenerAddress{Key: k, PortZero: strings.HasSuffix(k, ":0")})
		}
		return out
	}
	tests := []struct {
		name  string
		l     *listenerv3.Listener
		want  []ListenerAddress
		binds bool
	}{
		{"socket", &listenerv3.Listener{Address: sock}, key("127.0.0.1:3128"), true},
		{"socket not bound", &listenerv3.Listener{Address: sock, BindToPort: wrapperspb.Bool(false)}, key("127.0.0.1:3128"), false},
		{"udp", &listenerv3.Listener{Address: udp}, key("udp://10.0.0.1:53"), true},
		{"pipe", &listenerv3.Listener{Address: pipe("/var/run/app.sock")}, key("pipe:/var/run/app.sock"), true},
		{"abstract pipe", &listenerv3.Listener{Address: pipe("@app")}, key("pipe:@app"), true},
		{"pipe not bound", &listenerv3.Listener{Address: pipe("/var/run/app.sock"), BindToPort: wrapperspb.Bool(false)}, key("pipe:/var/run/app.sock"), false},
		{"additional addresses", &listenerv3.Listener{Address: sockAt("0.0.0.0", 80), AdditionalAddresses: also(sockAt("::", 80)), BindToPort: wrapperspb.Bool(false)},
			key("0.0.0.0:80", "[::]:80"), false},
		{"an IP as an address", &listenerv3.Listener{Address: sockAt("0:0::0", 80), AdditionalAddresses: also(sockAt("::ffff:10.0.0.1", 80))},
			key("[::]:80", "[::ffff:10.0.0.1]:80"), true},
		{"port 0", &listenerv3.Listener{Address: sockAt("127.0.0.1", 0), AdditionalAddresses: also(sockAt("::1", 0))}, key("127.0.0.1:0", "[::1]:0"), true},
		{"no address", &listenerv3.Listener{}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ListenerAddresses(tt.l); !slices.Equal(got, tt.want) {
				t.Errorf("ListenerAddresses = %v, want %v", got, tt.want)
			}
			if got := Binds(tt.l); got != tt.binds {
				t.Errorf("Binds = %v, want %v", got, tt.binds)
			}
		})
	}
}

// TestSameSockets: two copies of a listener have the same sockets unless their socket
// options, transparent, freebind, TCP Fast Open or the number of additional addresses differ.
func TestSameSockets(t *testing.T) {
	base := func() *listenerv3.Listener {
		return &listenerv3.Listener{AdditionalAddresses: []*listenerv3.AdditionalAddress{{}}}
	}
	for _, tc := range []struct {
		name string
		edit func(l *listenerv3.Listener)
		same bool
	}{
		{"equal", func(*listenerv3.Listener) {}, true},
		{"another address only", func(l *listenerv3.Listener) {
			l.Address = &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{Address: "10.0.0.1"}}}
		}, true},
		{"transparent", func(l *listenerv3.Listener) { l.Transparent = wrapperspb.Bool(true) }, false},
		{"freebind", func(l *listenerv3.Listener) { l.Freebind = wrapperspb.Bool(true) }, false},
		{"TCP Fast Open", func(l *listenerv3.Listener) { l.TcpFastOpenQueueLength = wrapperspb.UInt32(5) }, false},
		{"socket options", func(l *listenerv3.Listener) { l.SocketOptions = []*corev3.SocketOption{{Level: 1, Name: 2}} }, false},
		{"one additional address more", func(l *listenerv3.Listener) {
			l.AdditionalAddresses = append(l.AdditionalAddresses, &listenerv3.AdditionalAddress{})
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := base()
			tc.edit(b)
			if got := SameSockets(base(), b); got != tc.same {
				t.Errorf("SameSockets = %v, want %v", got, tc.same)
			}
		})
	}
}
