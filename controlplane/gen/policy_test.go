package gen

import (
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
)

// TestConnectionPoolProtocolOptions checks where the connection pool's timeouts and HTTP/2
// settings land, as istiod puts them: the cluster's common HTTP protocol options, for every
// protocol, the HTTP idle timeout over the TCP one; HTTP/2 settings only on HTTP/2 upstreams.
func TestConnectionPoolProtocolOptions(t *testing.T) {
	d := durationpb.New
	tests := []struct {
		name     string
		proto    model.Protocol
		pool     *networking.ConnectionPoolSettings
		idle     time.Duration // 0: unset
		maxDur   time.Duration
		streams  uint32
		keepIntv time.Duration
		h2       bool
		none     bool // no protocol options at all
	}{
		{name: "tcp timeouts on a TCP port", proto: model.ProtocolTCP,
			pool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{IdleTimeout: d(time.Minute), MaxConnectionDuration: d(time.Hour)}},
			idle: time.Minute, maxDur: time.Hour},
		{name: "the HTTP idle timeout wins", proto: model.ProtocolHTTP,
			pool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{IdleTimeout: d(time.Minute)},
				Http: &networking.ConnectionPoolSettings_HTTPSettings{IdleTimeout: d(time.Second)}},
			idle: time.Second},
		{name: "HTTP/2 settings on an HTTP/2 port", proto: model.ProtocolGRPC,
			pool: &networking.ConnectionPoolSettings{Http: &networking.ConnectionPoolSettings_HTTPSettings{MaxConcurrentStreams: 7,
				Http2KeepAlive: &networking.ConnectionPoolSettings_HTTPSettings_ConnectionKeepalive{Interval: d(30 * time.Second), Timeout: d(5 * time.Second)}}},
			streams: 7, keepIntv: 30 * time.Second, h2: true},
		{name: "HTTP/2 settings ignored on HTTP/1", proto: model.ProtocolHTTP,
			pool: &networking.ConnectionPoolSettings{Http: &networking.ConnectionPoolSettings_HTTPSettings{MaxConcurrentStreams: 7}}},
		{name: "no timeouts: no options", proto: model.ProtocolTCP,
			pool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 3}}, none: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &clusterv3.Cluster{Name: "outbound|80||a"}
			policy{pool: tc.pool}.applyPool(&shared{}, c, tc.proto.IsHTTP2(), true)
			a := c.GetTypedExtensionProtocolOptions()[httpProtocolOptionsName]
			if tc.none {
				if a != nil {
					t.Fatalf("protocol options %v, want none", a)
				}
				return
			}
			opts := &upstreamhttpv3.HttpProtocolOptions{}
			if a == nil || a.UnmarshalTo(opts) != nil {
				t.Fatalf("no HTTP protocol options: %v", c.GetTypedExtensionProtocolOptions())
			}
			common := opts.GetCommonHttpProtocolOptions()
			if common == nil {
				t.Fatal("no common HTTP protocol options")
			}
			if got := common.GetIdleTimeout().AsDuration(); (common.GetIdleTimeout() != nil) != (tc.idle != 0) || got != tc.idle {
				t.Errorf("idle timeout %v, want %v", common.GetIdleTimeout(), tc.idle)
			}
			if got := common.GetMaxConnectionDuration().AsDuration(); got != tc.maxDur {
				t.Errorf("max connection duration %v, want %v", got, tc.maxDur)
			}
			h2 := opts.GetExplicitHttpConfig().GetHttp2ProtocolOptions()
			if (h2 != nil) != tc.h2 {
				t.Fatalf("HTTP/2 options %v, want HTTP/2 %v", h2, tc.h2)
			}
			if got := h2.GetMaxConcurrentStreams().GetValue(); got != tc.streams {
				t.Errorf("max concurrent streams %d, want %d", got, tc.streams)
			}
			if got := h2.GetConnectionKeepalive().GetInterval().AsDuration(); got != tc.keepIntv {
				t.Errorf("keepalive interval %v, want %v", got, tc.keepIntv)
			}
			if _, err := validateDeep(c); err != nil {
				t.Error(err)
			}
		})
	}
}
