package gen

import (
	"slices"
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestSidecarEgressPorts: an egress listener with a port imports only that port of the
// services its hosts match (istiod's serviceMatchingListenerPort); one without a port, or an
// HTTP_PROXY port, imports every port.
func TestSidecarEgressPorts(t *testing.T) {
	web := &model.Service{Hostname: "web.app.svc.cluster.local", Namespace: "app", Addresses: []string{"10.96.0.10"}, Ports: []model.Port{
		{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}, {Name: "http-alt", Number: 8080, Protocol: model.ProtocolHTTP}, {Name: "tcp", Number: 5000, Protocol: model.ProtocolTCP}}}
	db := &model.Service{Hostname: "db.other.svc.cluster.local", Namespace: "other", Addresses: []string{"10.96.0.11"}, Ports: []model.Port{
		{Name: "tcp", Number: 5432, Protocol: model.ProtocolTCP}, {Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}}
	egress := func(port uint32, proto string, hosts ...string) *networking.IstioEgressListener {
		l := &networking.IstioEgressListener{Hosts: hosts}
		if port != 0 {
			l.Port = &networking.SidecarPort{Number: port, Protocol: proto, Name: "p"}
		}
		return l
	}
	tests := []struct {
		name     string
		egress   []*networking.IstioEgressListener
		clusters []string // outbound PORT|HOST
	}{
		{"one port", []*networking.IstioEgressListener{egress(8080, "HTTP", "app/*")}, []string{"8080|web.app.svc.cluster.local"}},
		{"a port and a catch-all", []*networking.IstioEgressListener{egress(5432, "TCP", "other/db.other.svc.cluster.local"), egress(0, "", "app/*")},
			[]string{"5000|web.app.svc.cluster.local", "5432|db.other.svc.cluster.local", "8080|web.app.svc.cluster.local", "80|web.app.svc.cluster.local"}},
		{"an HTTP_PROXY port imports every port", []*networking.IstioEgressListener{egress(3128, "HTTP_PROXY", "other/*")},
			[]string{"5432|db.other.svc.cluster.local", "80|db.other.svc.cluster.local"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "scoped"}, Spec: &networking.Sidecar{Egress: tt.egress}}
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{web, db}, Configs: []*istioconfig.Config{sc}})
			p := sidecarProxy("10.3.9.9", "scoped")
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			var got []string
			for _, r := range g[ClusterType] {
				if cn, err := ParseClusterName(r.Name); err == nil && cn.Direction == Outbound {
					got = append(got, strings.TrimPrefix(strings.Replace(r.Name, "||", "|", 1), "outbound|"))
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.clusters) {
				t.Errorf("clusters %v, want %v", got, tt.clusters)
			}
			for _, r := range g[ListenerType] {
				if i := strings.LastIndexByte(r.Name, '_'); i > 0 && !slices.ContainsFunc(tt.clusters, func(c string) bool { return strings.HasPrefix(c, r.Name[i+1:]+"|") }) {
					t.Errorf("listener %s for a port not imported", r.Name)
				}
			}
		})
	}
}
