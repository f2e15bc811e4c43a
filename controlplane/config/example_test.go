package config_test

import (
	"context"
	"fmt"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/istioconfig"
)

func ExampleDecode() {
	yaml := `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: api
spec:
  hosts: [api.example.com]
  ports:
  - number: 443
    name: https
    protocl: TLS
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress, namespace: istio-system}
spec:
  servers:
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: ["*"]
`
	cfgs, err := config.Decode("istio.yaml", []byte(yaml))
	for _, c := range cfgs {
		fmt.Println("decoded", c.Key())
	}
	fmt.Println(err)
	// Output:
	// decoded Gateway/istio-system/ingress
	// istio.yaml:10: ServiceEntry default/api: spec.ports[0].protocl: unknown field "protocl" (did you mean "protocol"?)
}

func ExampleMemory() {
	st := config.NewMemory(config.MemoryOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = st.Run(ctx) }()

	cfg := &istioconfig.Config{
		Meta: istioconfig.Meta{Kind: istioconfig.KindServiceEntry, Name: "web", Namespace: "shop"},
		Spec: &networking.ServiceEntry{Hosts: []string{"web.shop.svc.cluster.local"}},
	}
	_, _ = st.Create(cfg)
	_ = st.Delete(cfg.Key())
	for range 2 {
		ev := <-st.Events()
		fmt.Println(ev.Kind, ev.Key())
	}
	cancel()
	<-done
	// Output:
	// add ServiceEntry/shop/web
	// delete ServiceEntry/shop/web
}
