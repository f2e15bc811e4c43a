package istio_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xdslab/xdslab/bench/run"
	"github.com/xdslab/xdslab/controlplane"
	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/hack/istio/istiodlab"
	"github.com/xdslab/xdslab/probe"
	"github.com/xdslab/xdslab/scenarios"
)

// blinkMesh is the mesh the blinking-directory comparison serves: 100 services in files of
// one object each (as 'xdslab run --sink-dir' writes them), one SotW sidecar.
const blinkMesh = `
name: blink
seed: 3
duration: 1s
topology:
  namespaces: 2
  services: 100
  endpointsPerService: {dist: lognormal, median: 2, sigma: 0.5, min: 1, max: 4}
clients:
  - {name: sidecar, count: 1, xds: sotw, ramp: 100/s}
`

// cdsCounter records the cluster count of every CDS response the sidecar receives.
type cdsCounter struct {
	probe.NopHooks
	mu     sync.Mutex
	counts []int
}

func (c *cdsCounter) Response(_ probe.ClientInfo, r probe.ResponseInfo) {
	if strings.HasSuffix(r.TypeURL, "Cluster") {
		c.mu.Lock()
		c.counts = append(c.counts, r.Resources)
		c.mu.Unlock()
	}
}

// since returns the counts recorded from index i on, and the number recorded so far.
func (c *cdsCounter) since(i int) ([]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int(nil), c.counts[i:]...), len(c.counts)
}

// blink empties dir for two seconds: every file moved out and back, or the directory removed
// and rewritten.
func blink(t *testing.T, dir, how string) {
	t.Helper()
	aside := dir + ".aside"
	switch how {
	case "move":
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(aside, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if err := os.Rename(filepath.Join(dir, e.Name()), filepath.Join(aside, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(2 * time.Second)
		for _, e := range ents {
			if err := os.Rename(filepath.Join(aside, e.Name()), filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	case "rm":
		if err := os.CopyFS(aside, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		if err := os.CopyFS(dir, os.DirFS(aside)); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.RemoveAll(aside)
}

// TestBlinkingDirectory serves the same directory from Istio's DiscoveryServer (Istio's own
// file config source) and from xdslab's control plane, empties it for two seconds (every file
// moved out and back; rm -rf and restore) and counts a sidecar's clusters in every CDS
// response meanwhile. xdslab's must never drop (its delete guard holds the mass deletion and
// re-reads the directory); Istio's figures are logged for docs/faults.md.
func TestBlinkingDirectory(t *testing.T) {
	sc, err := scenarios.LoadBytes("blink.yaml", []byte(blinkMesh))
	if err != nil {
		t.Fatal(err)
	}
	for _, cp := range []string{"istiod", "xdslab"} {
		for _, how := range []string{"move", "rm"} {
			t.Run(cp+"/"+how, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "mesh")
				writeInitialMesh(t, sc, dir)
				var addr string
				var metricsAddr string
				switch cp {
				case "istiod":
					srv, err := istiodlab.Start(t, istiodlab.Options{Dir: dir})
					if err != nil {
						t.Fatal(err)
					}
					addr = srv.Addr
				case "xdslab":
					o := controlplane.DefaultOptions()
					o.ConfigDir, o.GRPCAddr, o.MetricsAddr = dir, "127.0.0.1:0", "127.0.0.1:0"
					o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
					srv, err := controlplane.New(o)
					if err != nil {
						t.Fatal(err)
					}
					ctx, cancel := context.WithCancel(context.Background())
					if err := srv.Start(ctx); err != nil {
						cancel()
						t.Fatal(err)
					}
					t.Cleanup(func() { cancel(); srv.Stop() })
					addr, metricsAddr = srv.GRPCAddr(), srv.MetricsAddr()
				}
				cfg, err := run.FleetConfig(sc, addr)
				if err != nil {
					t.Fatal(err)
				}
				counter := &cdsCounter{}
				cfg.Hooks = counter
				fl, err := fleet.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if err := fl.Start(ctx); err != nil {
					t.Fatal(err)
				}
				defer fl.Stop()
				deadline := time.Now().Add(60 * time.Second)
				for fl.Progress().FullConfig < 1 {
					if time.Now().After(deadline) {
						t.Fatal("the sidecar has no full config after 60s")
					}
					time.Sleep(20 * time.Millisecond)
				}
				time.Sleep(time.Second) // let the initial pushes settle
				before, from := counter.since(0)
				initial := before[len(before)-1]
				start := time.Now()
				blink(t, dir, how)
				// Long enough for a held deletion (5s) to be re-read and any push to land.
				time.Sleep(8 * time.Second)
				during, _ := counter.since(from)
				low, last := initial, initial
				for _, n := range during {
					low = min(low, n)
					last = n
				}
				t.Logf("%s, %s: clusters %d before; CDS responses during and after the blink: %d, fewest clusters %d, last %d (%v)",
					cp, how, initial, len(during), low, last, time.Since(start).Round(time.Millisecond))
				// Still watched? A new ServiceEntry after the blink must add a cluster.
				se := "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: after-blink, namespace: ns-0}\n" +
					"spec:\n  hosts: [after-blink.example.com]\n  location: MESH_EXTERNAL\n  resolution: DNS\n  ports: [{number: 80, name: http, protocol: HTTP}]\n"
				tmp := filepath.Join(filepath.Dir(dir), "after.tmp")
				if err := os.WriteFile(tmp, []byte(se), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(tmp, filepath.Join(dir, "zz-after-blink.yaml")); err != nil {
					t.Fatal(err)
				}
				seen := false
				for wait := time.Now().Add(5 * time.Second); time.Now().Before(wait) && !seen; time.Sleep(20 * time.Millisecond) {
					counts, _ := counter.since(from)
					seen = len(counts) > 0 && counts[len(counts)-1] == initial+1
				}
				t.Logf("%s, %s: a ServiceEntry written after the blink reached the sidecar within 5s: %v", cp, how, seen)
				if cp == "xdslab" {
					if !seen {
						t.Errorf("xdslab no longer follows the directory after the blink")
					}
					if low != initial || last != initial {
						t.Errorf("xdslab's sidecar went from %d clusters to %d during the blink (last %d): %v", initial, low, last, during)
					}
					if how != "move" {
						return // the directory was gone, not empty: the loaded config is kept, nothing is held
					}
					resp, err := http.Get("http://" + metricsAddr + "/metrics")
					if err != nil {
						t.Fatal(err)
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if !strings.Contains(string(body), "\nxdslab_cp_config_mass_deletes_held_total 1\n") {
						t.Errorf("/metrics does not count one held mass deletion")
					}
				}
			})
		}
	}
}
