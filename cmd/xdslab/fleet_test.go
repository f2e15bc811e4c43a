package main

import (
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFleetLabels(t *testing.T) {
	tests := []struct {
		proxyType string
		labels    map[string]string
		want      map[string]string
	}{
		{"sidecar", nil, nil},
		{"sidecar", map[string]string{"app": "a"}, map[string]string{"app": "a"}},
		{"router", nil, map[string]string{"istio": "ingressgateway"}},
		{"router", map[string]string{"app": "gw"}, map[string]string{"app": "gw", "istio": "ingressgateway"}},
		{"router", map[string]string{"istio": "egressgateway"}, map[string]string{"istio": "egressgateway"}},
	}
	for _, tt := range tests {
		f := fleetFlags{Target: "127.0.0.1:1", Clients: 1, Nack: "never", Progress: "off", ProxyType: tt.proxyType, Labels: tt.labels}
		cfg, err := fleetConfig(f, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, cfg.Groups[0].Identity.Labels); diff != "" {
			t.Errorf("%s %v: labels (-want +got):\n%s", tt.proxyType, tt.labels, diff)
		}
	}
}
