package xds

import (
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/internal/syncbuf"
)

// countingMetrics records rejects by type and discards the rest.
type countingMetrics struct {
	NopMetrics
	mu      sync.Mutex
	rejects map[string]int
}

func (m *countingMetrics) Rejected(typeURL string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rejects == nil {
		m.rejects = map[string]int{}
	}
	m.rejects[typeURL]++
}

func (m *countingMetrics) rejected(typeURL string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rejects[typeURL]
}

// A NACK is logged at warning level with the client's error and counted in
// pilot_total_xds_rejects{type} once per (connection, type, nonce): repeating it, or NACKing
// after the flow-control wait timed out, does not log or count again; a new nonce does.
func TestNackIsLoggedAndCountedOncePerNonce(t *testing.T) {
	for _, delta := range []bool{false, true} {
		name := "sotw"
		if delta {
			name = "delta"
		}
		t.Run(name, func(t *testing.T) {
			m := &countingMetrics{}
			logs := &syncbuf.Buffer{}
			opts := testOptions()
			opts.Metrics = m
			opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
			ts := startServer(t, opts)
			in := topology(3, 1)
			ts.push(in, true)
			node := sidecarNode(t, "10.200.0.1", "ns-0", "")
			var nack func(typeURL, nonce, msg string)
			var recvNonce func() (string, string)
			var barrier func()
			if delta {
				c := dialDelta(t, ts.addr, node)
				c.send(gen.ClusterType, nil, nil, "", "")
				nack = func(typeURL, nonce, msg string) { c.send(typeURL, nil, nil, nonce, msg) }
				recvNonce = func() (string, string) { r := c.recv(); return r.TypeUrl, r.Nonce }
				barrier = c.barrier
			} else {
				c := dial(t, ts.addr, node)
				c.send(gen.ClusterType, "", "", nil, "")
				nack = func(typeURL, nonce, msg string) { c.send(typeURL, "", nonce, nil, msg) }
				recvNonce = func() (string, string) { r := c.recv(); return r.TypeUrl, r.Nonce }
				barrier = c.barrier
			}
			typ, nonce := recvNonce()
			if typ != gen.ClusterType {
				t.Fatalf("got %s, want CDS", typ)
			}
			nack(gen.ClusterType, nonce, "bad cluster: weight 0")
			nack(gen.ClusterType, nonce, "bad cluster: weight 0") // repeated: not a new rejection
			nack(gen.ClusterType, "zzzz", "never sent")           // not a nonce of this connection

			in.Services = append(in.Services, topology(4, 1).Services[3])
			ts.push(in, true)
			typ, nonce2 := recvNonce()
			if typ != gen.ClusterType {
				t.Fatalf("got %s, want CDS", typ)
			}
			nack(gen.ClusterType, nonce2, "second rejection")
			nack(gen.ClusterType, nonce, "bad cluster: weight 0") // older nonce, already counted
			barrier()                                             // every request above has been handled

			if got := m.rejected(gen.ClusterType); got != 2 {
				t.Errorf("pilot_total_xds_rejects{cds} = %d, want 2 (one per nonce)", got)
			}
			out := logs.String()
			if n := strings.Count(out, "NACK"); n != 2 {
				t.Errorf("%d NACK log lines, want 2:\n%s", n, out)
			}
			for _, want := range []string{"level=WARN", "bad cluster: weight 0", "second rejection", "type=" + gen.ClusterType, "nonce=" + nonce2} {
				if !strings.Contains(out, want) {
					t.Errorf("log lacks %q:\n%s", want, out)
				}
			}
			st := ts.Syncz()[0]
			for _, ty := range st.Types {
				if ty.TypeURL == gen.ClusterType && (ty.Nacks != 2 || ty.LastError != "second rejection") {
					t.Errorf("syncz CDS: %+v", ty)
				}
			}
		})
	}
}
