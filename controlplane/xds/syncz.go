package xds

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

// TypeStatus is one type's protocol state for one client, as /debug/syncz shows it.
type TypeStatus struct {
	TypeURL       string    `json:"typeUrl"`
	Subscribed    int       `json:"subscribed"`
	Wildcard      bool      `json:"wildcard"`
	Sent          string    `json:"sent"`
	Acked         string    `json:"acked"`
	Nacked        string    `json:"nacked,omitempty"`
	LastError     string    `json:"lastError,omitempty"`
	Nacks         int       `json:"nacks"`
	Responses     int       `json:"responses"`
	Pending       bool      `json:"pending"`
	Held          bool      `json:"held"`
	LastPush      time.Time `json:"lastPush"`
	SinceLastPush string    `json:"sinceLastPush,omitempty"`
}

// ClientStatus is one connected client's state (like `istioctl proxy-status`).
type ClientStatus struct {
	NodeID    string       `json:"nodeId"`
	Namespace string       `json:"namespace"`
	Generator string       `json:"generator,omitempty"`
	Delta     bool         `json:"delta,omitempty"`
	Connected time.Time    `json:"connected"`
	Types     []TypeStatus `json:"types"`
}

// Syncz returns every registered client's status, sorted by node id.
func (s *Server) Syncz() []ClientStatus {
	s.mu.Lock()
	conns := slices.Collect(maps.Keys(s.conns))
	s.mu.Unlock()
	now := s.now()
	out := make([]ClientStatus, 0, len(conns))
	for _, c := range conns {
		c.statusMu.Lock()
		st := c.status
		st.Connected = c.since
		st.Types = slices.Clone(st.Types)
		c.statusMu.Unlock()
		for i := range st.Types {
			if !st.Types[i].LastPush.IsZero() {
				st.Types[i].SinceLastPush = now.Sub(st.Types[i].LastPush).Round(time.Millisecond).String()
			}
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b ClientStatus) int { return strings.Compare(a.NodeID, b.NodeID) })
	return out
}

// SynczHandler serves /debug/syncz as JSON.
func (s *Server) SynczHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s.Syncz())
	})
}
