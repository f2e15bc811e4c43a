package parity_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"istio.io/istio/pilot/pkg/config/kube/crd"
	"istio.io/istio/pkg/config/schema/collections"

	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/hack/istio/parity"
)

var (
	paritySeeds = flag.Int("parity.seeds", 0, "TestParityRandom: run seeds 1..N instead of the fixed list")
	parityWarm  = flag.Bool("parity.warm", true, "TestParityRandom: also run every random proxy on fake Envoys against both control planes: they must warm on xdslab where they warm on istiod, and NACK alike where istiod's config is refused (false: compare resources only)")
	paritySeed  = flag.Uint64("parity.seed", 0, "TestParityRandom: run this seed only")
	parityBase  = flag.Bool("parity.base", false, "TestParityRandom: draw only the first stream's shapes (a seed's mesh before the Sidecars and ServiceEntries of the second stream, extras, the routes and rules of the third, shapes, the fourth's, later, and the gateway TLS modes of the fifth, gwtlsShapes)")
)

// randomSeeds are the seeds TestParityRandom runs by default: those of 1..60 on which istiod
// and xdslab agree (the others differ in ways docs/parity.md lists as not generated yet), enough
// for meshes of every shape the generator draws, few enough for the test to stay short. A
// fixed difference adds its seeds here.
var randomSeeds = []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60}

// randomProxies are the proxies a random mesh is compared from: the corpus's, less those
// that only the corpus's Sidecar resources give a point of view.
var randomProxies = func() []int {
	corpusOnly := map[string]bool{"sidecar-scoped": true, "sidecar-split": true, "sidecar-locked": true, "sidecar-egressproxy": true, "sidecar-inbound": true, "sidecar-egressbind": true,
		"sidecar-none-scoped": true, "sidecar-reel": true, "sidecar-reel-bind": true, "sidecar-quire": true, "sidecar-quire-none": true,
		"sidecar-dual-bind": true, "sidecar-quire-dual": true, "sidecar-quire-dual-none": true, "gateway-dual": true,
		"sidecar-duo-loop": true, "sidecar-duo-wild": true, "sidecar-counter": true}
	var out []int
	for i, p := range proxies {
		if !corpusOnly[p.name] {
			out = append(out, i)
		}
	}
	return out
}()

// TestParityRandom compares istiod and xdslab on meshes nobody wrote: for each seed, a random
// valid Istio configuration (randmesh_test.go) is written to a directory, served by both
// control planes and compared from the corpus's points of view, as TestParityWithIstio
// compares testdata/mesh, and from its proxyless gRPC clients', as TestParityGRPCWithIstio. A failing seed's YAML is kept (its path is logged) to reproduce it:
//
//	go test -count=1 -run TestParityRandom ./parity/ -parity.seed 17
//	PARITY_DIR=DIR go test -count=1 -run TestParityWithIstio ./parity/
func TestParityRandom(t *testing.T) {
	seeds := randomSeeds
	switch {
	case *paritySeed != 0:
		seeds = []uint64{*paritySeed}
	case *paritySeeds > 0:
		seeds = nil
		for s := range *paritySeeds {
			seeds = append(seeds, uint64(s+1))
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			m := newRandMesh(seed)
			m.base = *parityBase
			m.generate()
			y, err := m.YAML(seed)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			file := filepath.Join(dir, "mesh.yaml")
			if err := os.WriteFile(file, y, 0o644); err != nil {
				t.Fatal(err)
			}
			failed := true
			defer func() {
				if failed || t.Failed() {
					t.Logf("seed %d: mesh kept at %s", seed, keep(t, seed, y))
				}
			}()
			checkValid(t, dir, y)
			ctx, istioAddr, oursAddr := serveBoth(t, dir)
			for _, i := range randomProxies {
				p := proxies[i]
				if ds := compareProxy(t, ctx, istioAddr, oursAddr, p.name, p.proxy, map[int]bool{}); len(ds) > 0 {
					t.Errorf("seed %d, proxy %s: %d semantic differences (- only Istio, + only xdslab):\n%s", seed, p.name, len(ds), parity.Format(ds))
				}
			}
			// Proxyless gRPC clients too, as TestParityGRPCWithIstio compares the corpus (a
			// client offered no listener has nothing to compare; a mesh that offers none of
			// them any is a generator or fetch regression).
			compared := 0
			for _, p := range grpcProxies {
				ds, skip := compareGRPC(t, ctx, istioAddr, oursAddr, p.proxy, map[int]bool{})
				if skip {
					t.Logf("seed %d, gRPC client %s: offered no listener by either control plane", seed, p.name)
					continue
				}
				compared++
				if len(ds) > 0 {
					t.Errorf("seed %d, gRPC client %s: %d semantic differences (- only Istio, + only xdslab):\n%s", seed, p.name, len(ds), parity.Format(ds))
				}
			}
			if compared == 0 {
				t.Errorf("seed %d: no gRPC client was offered a listener: nothing compared", seed)
			}
			if *parityWarm {
				// Every random proxy's fake Envoys fare on xdslab's config as on istiod's: they
				// warm on both, or NACK both alike where istiod generates what Envoy refuses.
				errs, shared := warmAlike(warm(t, istioAddr, randomProxies), warm(t, oursAddr, randomProxies))
				for _, err := range errs {
					t.Errorf("seed %d: %v", seed, err)
				}
				for _, s := range shared {
					t.Logf("seed %d: Envoy refuses istiod's config and xdslab's alike: %s", seed, s)
				}
			}
			failed = false
		})
	}
}

// keep copies a failing seed's mesh out of the test's temporary directory, which the test
// removes, and returns its path.
func keep(t *testing.T, seed uint64, y []byte) string {
	dir := filepath.Join(os.TempDir(), "xdslab-parity-random", fmt.Sprintf("seed-%d", seed))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("keep: %v", err)
		return "(not kept)"
	}
	f := filepath.Join(dir, "mesh.yaml")
	if err := os.WriteFile(f, y, 0o644); err != nil {
		t.Logf("keep: %v", err)
		return "(not kept)"
	}
	return f
}

// checkValid fails the test when the generator wrote an object Istio's validation rejects or
// xdslab rejects or does not generate: a generator bug, not a parity difference.
func checkValid(t *testing.T, dir string, y []byte) {
	t.Helper()
	cfgs, _, err := crd.ParseInputs(string(y))
	if err != nil {
		t.Fatalf("Istio cannot parse the generated mesh: %v", err)
	}
	for _, c := range cfgs {
		s, ok := collections.Pilot.FindByGroupVersionAliasesKind(c.GroupVersionKind)
		if !ok {
			t.Fatalf("Istio has no schema for %v", c.GroupVersionKind)
		}
		if _, err := s.ValidateConfig(c); err != nil {
			t.Fatalf("the generator wrote an invalid %s %s/%s: %v", c.GroupVersionKind.Kind, c.Namespace, c.Name, err)
		}
	}
	r := config.CheckPaths([]string{dir}, config.Decoder{})
	for _, err := range r.Errors {
		t.Errorf("xdslab rejects the generated mesh: %v", err)
	}
	for _, w := range r.Warnings {
		if strings.Contains(w.Msg, "not generated") {
			t.Errorf("the generator wrote a shape xdslab does not generate: %v", w)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}
