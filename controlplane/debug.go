package controlplane

import (
	"encoding/json"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// Handler serves /metrics, /debug/config, /debug/snapshot, /debug/syncz and Go's profiles under
// /debug/pprof/ (as istiod does on its debug port), so a slow push can be profiled in place.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{ErrorLog: nil, EnableOpenMetrics: true}))
	mux.HandleFunc("GET /debug/config", s.serveDebugConfig)
	mux.HandleFunc("GET /debug/snapshot", s.serveDebugSnapshot)
	mux.Handle("GET /debug/syncz", s.xds.SynczHandler())
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("xdslab control plane\n/metrics\n/debug/config\n/debug/snapshot\n/debug/syncz\n/debug/pprof/\n"))
	})
	return mux
}

// DebugConfig is what /debug/config serves.
type DebugConfig struct {
	// ConfigDir is the watched directory ("" without one).
	ConfigDir string `json:"configDir"`
	// Files lists each file with the objects it defines (its last good parse) and its last
	// error; FileErrors counts rejected loads so far.
	Files      []config.FileStatus `json:"files"`
	FileErrors uint64              `json:"fileErrors"`
	Synced     bool                `json:"synced"`
	// StoreObjects counts the config store's objects by kind.
	StoreObjects map[istioconfig.Kind]int `json:"storeObjects"`
	// RejectedServiceEntries are entries whose latest version could not be converted (their
	// previous services are kept), with why.
	RejectedServiceEntries map[string]string `json:"rejectedServiceEntries,omitempty"`
	// Services is the number of services in the aggregate.
	Services        int    `json:"services"`
	SnapshotVersion string `json:"snapshotVersion"`
}

// DebugConfig returns what /debug/config serves.
func (s *Server) DebugConfig() DebugConfig {
	st := s.FileStatus()
	out := DebugConfig{
		ConfigDir: s.opts.ConfigDir, Files: st.Files, FileErrors: st.Errors, Synced: st.Synced,
		StoreObjects: map[istioconfig.Kind]int{}, SnapshotVersion: s.Snapshot().Version,
	}
	if out.Files == nil {
		out.Files = []config.FileStatus{}
	}
	for _, k := range istioconfig.Kinds() {
		if n := len(s.store.List(k, "")); n > 0 {
			out.StoreObjects[k] = n
		}
	}
	if agg := s.Aggregate(); agg != nil {
		out.Services = agg.ServiceCount()
		for k, err := range agg.Rejected() {
			if out.RejectedServiceEntries == nil {
				out.RejectedServiceEntries = map[string]string{}
			}
			out.RejectedServiceEntries[k.String()] = err.Error()
		}
	}
	return out
}

// DebugSnapshot is what /debug/snapshot serves: the summary of the latest snapshot and its
// services with their endpoint counts and generations.
type DebugSnapshot struct {
	model.SnapshotSummary
	ServiceList []DebugService `json:"serviceList"`
}

// DebugService is one service of /debug/snapshot.
type DebugService struct {
	Hostname    string `json:"hostname"`
	Namespace   string `json:"namespace"`
	Resolution  string `json:"resolution"`
	Ports       int    `json:"ports"`
	Endpoints   int    `json:"endpoints"`
	ServiceGen  uint64 `json:"serviceGen"`
	EndpointGen uint64 `json:"endpointGen"`
}

func (s *Server) serveDebugConfig(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, s.DebugConfig())
}

func (s *Server) serveDebugSnapshot(w http.ResponseWriter, r *http.Request) {
	snap := s.Snapshot()
	out := DebugSnapshot{SnapshotSummary: snap.Summary(), ServiceList: []DebugService{}}
	host := r.URL.Query().Get("host") // optional filter: a substring of the hostname
	for _, svc := range snap.Services() {
		if host != "" && !strings.Contains(svc.Hostname, host) {
			continue
		}
		out.ServiceList = append(out.ServiceList, DebugService{Hostname: svc.Hostname, Namespace: svc.Namespace,
			Resolution: svc.Resolution.String(), Ports: len(svc.Ports), Endpoints: len(snap.Endpoints(svc.Hostname)),
			ServiceGen: snap.ServiceGen(svc.Hostname), EndpointGen: snap.EndpointGen(svc.Hostname)})
	}
	slices.SortFunc(out.ServiceList, func(a, b DebugService) int { return strings.Compare(a.Hostname, b.Hostname) })
	writeJSON(w, out)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
