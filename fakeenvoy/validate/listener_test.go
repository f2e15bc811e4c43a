package validate

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestBindKey: a listener binds its socket address, or its pipe (a unix domain socket, an
// abstract one too); one with bind_to_port false or no address binds nothing.
func TestBindKey(t *testing.T) {
	sock := &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 3128}}}}
	pipe := func(path string) *corev3.Address {
		return &corev3.Address{Address: &corev3.Address_Pipe{Pipe: &corev3.Pipe{Path: path}}}
	}
	tests := []struct {
		name string
		l    *listenerv3.Listener
		want string
	}{
		{"socket", &listenerv3.Listener{Address: sock}, "TCP:127.0.0.1:3128"},
		{"socket not bound", &listenerv3.Listener{Address: sock, BindToPort: wrapperspb.Bool(false)}, ""},
		{"pipe", &listenerv3.Listener{Address: pipe("/var/run/app.sock")}, "pipe:/var/run/app.sock"},
		{"abstract pipe", &listenerv3.Listener{Address: pipe("@app")}, "pipe:@app"},
		{"pipe not bound", &listenerv3.Listener{Address: pipe("/var/run/app.sock"), BindToPort: wrapperspb.Bool(false)}, ""},
		{"no address", &listenerv3.Listener{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BindKey(tt.l); got != tt.want {
				t.Errorf("BindKey = %q, want %q", got, tt.want)
			}
		})
	}
}
