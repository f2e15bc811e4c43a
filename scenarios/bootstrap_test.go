package scenarios

import (
	"errors"
	"testing"
	"time"
)

// TestBootstrapProfiles: a group takes its bootstrap profile's nodeOnFirstOnly,
// initialFetchTimeout and listenerDrain (istio by default), and a field written beside it wins.
func TestBootstrapProfiles(t *testing.T) {
	type trio struct {
		node        bool
		ift, drain  time.Duration
		profileName string
	}
	istio := trio{true, 0, 45 * time.Second, BootstrapIstio}
	envoy := trio{false, 15 * time.Second, 600 * time.Second, BootstrapEnvoy}
	for _, tc := range []struct {
		name, yaml string
		want       trio
	}{
		{"default", "name: x\nclients: [{count: 1}]\n", istio},
		{"no clients section", "name: x\n", istio},
		{"istio", "name: x\nclients: [{bootstrap: istio}]\n", istio},
		{"envoy", "name: x\nclients: [{bootstrap: envoy}]\n", envoy},
		{"envoy, node written", "name: x\nclients: [{bootstrap: envoy, nodeOnFirstOnly: true}]\n", trio{true, 15 * time.Second, 600 * time.Second, BootstrapEnvoy}},
		{"envoy, timeout written 0", "name: x\nclients: [{bootstrap: envoy, initialFetchTimeout: 0s}]\n", trio{false, 0, 600 * time.Second, BootstrapEnvoy}},
		{"istio, drain written", "name: x\nclients: [{listenerDrain: 10s, nodeOnFirstOnly: false}]\n", trio{false, 0, 10 * time.Second, BootstrapIstio}},
		{"envoy, fields written first", "name: x\nclients:\n  - listenerDrain: 0s\n    bootstrap: envoy\n", trio{false, 15 * time.Second, 0, BootstrapEnvoy}},
		// A gRPC group does not drain, but its profile's drain (not written) is no error.
		{"envoy, grpc", "name: x\nclients: [{xds: grpc, bootstrap: envoy}]\n", envoy},
		{"envoy, grpc, profile's drain written", "name: x\nclients: [{xds: grpc, bootstrap: envoy, listenerDrain: 10m}]\n", envoy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := LoadBytes("b.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			c := s.Clients[0]
			got := trio{c.NodeOnFirstOnly, c.InitialFetchTimeout.D(), c.ListenerDrain.D(), c.Bootstrap}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestBootstrapUnknown: an unknown profile is an error at its line, naming the profiles.
func TestBootstrapUnknown(t *testing.T) {
	_, err := LoadBytes("b.yaml", []byte("name: x\nclients:\n  - count: 2\n    bootstrap: envoi\n"))
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 1 {
		t.Fatalf("err = %v, want one error", err)
	}
	e := errs[0]
	if e.File != "b.yaml" || e.Line != 4 || e.Path != "clients[0].bootstrap" {
		t.Errorf("error at %s:%d %s, want b.yaml:4 clients[0].bootstrap: %v", e.File, e.Line, e.Path, e)
	}
	if want := `did you mean "envoy"?`; e.Fix != want {
		t.Errorf("fix %q, want %q", e.Fix, want)
	}
}

// TestBootstrapSet: setting a group's profile (xdslab tune --param, --set) gives it the
// profile's values but for the fields its file wrote; UseBootstrap, in Go, all of them.
func TestBootstrapSet(t *testing.T) {
	s, err := LoadBytes("b.yaml", []byte("name: x\nclients: [{listenerDrain: 5s}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set("clients[0].bootstrap", "envoy"); err != nil {
		t.Fatal(err)
	}
	if c := s.Clients[0]; c.NodeOnFirstOnly || c.InitialFetchTimeout.D() != 15*time.Second || c.ListenerDrain.D() != 5*time.Second {
		t.Errorf("after Set bootstrap envoy: %v %v %v, want false 15s 5s (written)", c.NodeOnFirstOnly, c.InitialFetchTimeout, c.ListenerDrain)
	}
	if err := s.Set("clients[0].bootstrap", "nope"); err == nil {
		t.Error("Set bootstrap nope: no error")
	}
	c := DefaultClient()
	c.UseBootstrap(BootstrapEnvoy)
	if c.NodeOnFirstOnly || c.InitialFetchTimeout.D() != 15*time.Second || c.ListenerDrain.D() != 600*time.Second {
		t.Errorf("UseBootstrap(envoy): %v %v %v", c.NodeOnFirstOnly, c.InitialFetchTimeout, c.ListenerDrain)
	}
	c.UseBootstrap(BootstrapIstio)
	if !sameTrio(c, DefaultClient()) {
		t.Errorf("UseBootstrap(istio) is not DefaultClient's: %+v", c)
	}
}

func sameTrio(a, b Client) bool {
	return a.Bootstrap == b.Bootstrap && a.NodeOnFirstOnly == b.NodeOnFirstOnly &&
		a.InitialFetchTimeout == b.InitialFetchTimeout && a.ListenerDrain == b.ListenerDrain
}

// TestBootstrapSetOrder: Set keeps a profile field it wrote whatever is set after it, and a
// group or list Set writes whole takes its own profile for the fields it does not write.
func TestBootstrapSetOrder(t *testing.T) {
	type trio struct {
		node       bool
		ift, drain time.Duration
	}
	for _, tc := range []struct {
		name string
		file string
		sets [][2]string
		want trio
	}{
		{"field then profile", "name: x\nclients: [{name: a, count: 2}]\n",
			[][2]string{{"clients[0].initialFetchTimeout", "5s"}, {"clients[0].bootstrap", "envoy"}}, trio{false, 5 * time.Second, 600 * time.Second}},
		{"profile then field", "name: x\nclients: [{name: a, count: 2}]\n",
			[][2]string{{"clients[0].bootstrap", "envoy"}, {"clients[0].initialFetchTimeout", "5s"}}, trio{false, 5 * time.Second, 600 * time.Second}},
		{"whole group", "name: x\nclients: [{name: a, count: 2}]\n",
			[][2]string{{"clients[0]", "{name: a, count: 2, bootstrap: envoy}"}}, trio{false, 15 * time.Second, 600 * time.Second}},
		{"whole group with a field", "name: x\nclients: [{name: a, count: 2}]\n",
			[][2]string{{"clients[0]", "{name: a, count: 2, bootstrap: envoy, listenerDrain: 5s}"}}, trio{false, 15 * time.Second, 5 * time.Second}},
		{"whole list, the file's field replaced", "name: x\nclients: [{name: a, count: 2, listenerDrain: 7s}]\n",
			[][2]string{{"clients", "[{name: a, count: 2, bootstrap: envoy}]"}}, trio{false, 15 * time.Second, 600 * time.Second}},
		{"file field kept", "name: x\nclients: [{name: a, count: 2, listenerDrain: 7s}]\n",
			[][2]string{{"clients[0].bootstrap", "envoy"}}, trio{false, 15 * time.Second, 7 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := LoadBytes("b.yaml", []byte(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			for _, kv := range tc.sets {
				if err := s.Set(kv[0], kv[1]); err != nil {
					t.Fatalf("Set(%s, %s): %v", kv[0], kv[1], err)
				}
			}
			c := s.Clients[0]
			if got := (trio{c.NodeOnFirstOnly, c.InitialFetchTimeout.D(), c.ListenerDrain.D()}); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	// A clone's Set does not write into the original's record of what was set.
	s, err := LoadBytes("b.yaml", []byte("name: x\nclients: [{name: a, count: 2}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Clone()
	if err := c.Set("clients[0].listenerDrain", "5s"); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("clients[0].bootstrap", "envoy"); err != nil {
		t.Fatal(err)
	}
	if d := s.Clients[0].ListenerDrain.D(); d != 600*time.Second {
		t.Errorf("original's drain %v after a clone's Set, want envoy's 600s", d)
	}
}
