package fakeenvoy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"

	"github.com/xdslab/xdslab/fakeenvoy/istioagent"
	"github.com/xdslab/xdslab/fakeenvoy/machine"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/internal/clock"
	"github.com/xdslab/xdslab/internal/rxstamp"
)

// Envoy's defaults, and istio-agent's drain time (see Bootstrap).
const (
	DefaultInitialFetchTimeout = 15 * time.Second
	// DefaultListenerDrain is istio-agent's: it starts Envoy with --drain-time-s set to the
	// proxyConfig's drainDuration, 45s unless the mesh config says otherwise (Envoy's own
	// default, a ClientConfig's, is EnvoyListenerDrain).
	DefaultListenerDrain = 45 * time.Second
	DefaultBackoffBase   = 500 * time.Millisecond
	DefaultBackoffMax    = 30 * time.Second
)

// ClientConfig configures one fake Envoy. Zero values take Envoy's own defaults (see
// withDefaults), BootstrapEnvoy's profile among them; the fleet's front ends (a scenario's
// clients[].bootstrap, xdslab fleet --bootstrap) default to BootstrapIstio and fill the fields
// they were not given with Profile.Apply.
type ClientConfig struct {
	// Index and Group are the client's position in the fleet and its group (scenario client
	// name); they are reported back to hooks unchanged.
	Index int
	Group string
	// Node is the identity sent to the server (build it with IdentityTemplate.Node). Required;
	// it is encoded once by NewClient and must not be modified afterwards.
	Node *corev3.Node
	// Delta selects the incremental protocol (DeltaAggregatedResources).
	Delta bool
	// GRPC makes the client a proxyless gRPC client (grpc-go's xDS client, see package validate's grpc.go): SotW,
	// named subscriptions from the GRPCTargets listeners ("host:port") down to EDS, grpc-go's
	// validation rules. Delta must be false.
	GRPC        bool
	GRPCTargets []string
	// NodeOnFirstOnly sends node only on the first request of each stream
	// (set_node_on_first_message_only); by default every request carries it, as Envoy does. A
	// gRPC client sends it on a stream's first request only, as grpc-go does, whatever this says.
	NodeOnFirstOnly bool
	// InitialFetchTimeout is the initial_fetch_timeout of the bootstrap's cds_config and
	// lds_config: how long the first CDS and LDS responses are waited for; default 15s
	// (Envoy's; Istio's bootstrap sets 0s: see Bootstrap). A negative value disables it
	// (Envoy's 0).
	InitialFetchTimeout time.Duration
	// SourceFetchTimeout is Envoy's initial_fetch_timeout of a config source the control plane
	// sends without one (a cluster's eds_config, an RDS config_source, a secret's sds_config,
	// as Istio leaves credentialName secrets): how long a warming cluster or listener waits for
	// what it serves; default 15s (ConfigSource's default, which no bootstrap changes). A
	// negative value disables it. A config source's own value always wins.
	SourceFetchTimeout time.Duration
	// ListenerDrain is Envoy's --drain-time-s: a listener an LDS update removes or replaces
	// drains that long, its route configurations and secrets on ADS still subscribed (package
	// machine's drain.go); default EnvoyListenerDrain (Envoy's 600s; istio-agent passes
	// DefaultListenerDrain). A negative value drops them at once. Proxyless gRPC clients do not
	// drain.
	ListenerDrain time.Duration
	Nack          policy.Nack
	Ack           policy.Ack
	// Backoff between reconnect attempts; default 500ms base, 30s max, fully jittered.
	Backoff Backoff
	// Seed drives every random choice of the client (NACK probability, ACK delay, jitter).
	Seed uint64
	// Clock is injected for tests; nil means the real clock.
	Clock clock.Clock
	// Interner, when set, shares decoded resources with every other client given the same
	// one (a fleet gives one to all its clients); nil decodes privately. Sharing changes
	// nothing the client does or reports: resources are immutable once decoded.
	Interner *machine.Interner
	// Agent is the emulated istio-agent that serves the secrets whose sds_config is not ADS
	// (see package machine's sds.go); a fleet gives one to all its clients. nil: such secrets
	// never arrive (and Client.Blocked says so).
	Agent *istioagent.Agent

	// BufferPool is the buffer pool of the client's connection, where its codec gathers a
	// response spanning several buffers that it cannot read in place (nil: grpc-go's default
	// pool); a fleet gives its own.
	BufferPool mem.BufferPool
	// Stamps, when set, is where the client's codec takes kernel receive stamps from: a fleet
	// gives a client on a plaintext connection of its own that connection (package
	// internal/h2client; see package internal/rxstamp). Such a client reads its responses on
	// its own goroutine (see package doc), so a source must stamp every message it can.
	Stamps rxstamp.Source
}

// machineConfig is the configuration of the client's machine, with the real node (NewClient
// gives the machine its codec's stand-in) and the workload read from it, since the stand-in
// has no metadata.
func (c ClientConfig) machineConfig() machine.Config {
	return machine.Config{
		Node:                c.Node,
		NodeOnFirstOnly:     c.NodeOnFirstOnly,
		Delta:               c.Delta,
		GRPC:                c.GRPC,
		GRPCTargets:         c.GRPCTargets,
		InitialFetchTimeout: c.InitialFetchTimeout,
		SourceFetchTimeout:  c.SourceFetchTimeout,
		ListenerDrain:       c.ListenerDrain,
		Nack:                c.Nack,
		Ack:                 c.Ack,
		Seed:                c.Seed,
		Interner:            c.Interner,
		Agent:               c.Agent,
		Workload:            istioagent.WorkloadOf(c.Node),
	}
}

// Connector returns a connection to the control plane; the fleet may share one among clients.
// Run calls it for every (re)connect attempt and never closes what it returns. The client opens
// its streams with a grpc.ForceCodecV2 call option (its codec writes the node it keeps
// encoded), which the connection must honour, as *grpc.ClientConn does.
type Connector func(ctx context.Context) (grpc.ClientConnInterface, error)

// Backoff is Envoy's jittered exponential backoff: attempt n (from 0) waits a uniformly random
// time in [0, min(Base*2^n, Max)).
type Backoff struct {
	Base time.Duration
	Max  time.Duration
}

// Next returns the wait before retry number attempt (0 = first retry).
func (b Backoff) Next(attempt int, rng *rand.Rand) time.Duration {
	ceil := b.Max
	if attempt < 32 {
		if d := b.Base << attempt; d > 0 && d < b.Max {
			ceil = d
		}
	}
	if ceil <= 0 {
		return 0
	}
	return time.Duration(rng.Int64N(int64(ceil)))
}

// Validate reports a configuration the client cannot run with.
func (c ClientConfig) Validate() error {
	if c.Node == nil || c.Node.GetId() == "" {
		return fmt.Errorf("fakeenvoy: client %d: node with an id is required (use IdentityTemplate.Node)", c.Index)
	}
	if c.Backoff.Base < 0 || c.Backoff.Max < 0 || (c.Backoff.Max > 0 && c.Backoff.Base > c.Backoff.Max) {
		return fmt.Errorf("fakeenvoy: client %d: backoff needs 0 <= base <= max, got base %s max %s", c.Index, c.Backoff.Base, c.Backoff.Max)
	}
	if c.GRPC && c.Delta {
		return fmt.Errorf("fakeenvoy: client %d: a gRPC client speaks SotW only (grpc-go has no Delta xDS): unset Delta", c.Index)
	}
	if c.GRPC && len(c.GRPCTargets) == 0 {
		return fmt.Errorf("fakeenvoy: client %d: a gRPC client needs GRPCTargets (listener names host:port)", c.Index)
	}
	if err := c.Nack.Validate(); err != nil {
		return fmt.Errorf("fakeenvoy: client %d: %w", c.Index, err)
	}
	if err := c.Ack.Validate(); err != nil {
		return fmt.Errorf("fakeenvoy: client %d: %w", c.Index, err)
	}
	return nil
}

func (c ClientConfig) withDefaults() ClientConfig {
	if c.InitialFetchTimeout == 0 {
		c.InitialFetchTimeout = DefaultInitialFetchTimeout
	}
	if c.SourceFetchTimeout == 0 {
		c.SourceFetchTimeout = DefaultInitialFetchTimeout
	}
	if c.ListenerDrain == 0 {
		c.ListenerDrain = EnvoyListenerDrain
	}
	if c.Backoff.Base == 0 {
		c.Backoff.Base = DefaultBackoffBase
	}
	if c.Backoff.Max == 0 {
		c.Backoff.Max = DefaultBackoffMax
	}
	if c.Clock == nil {
		c.Clock = clock.Real()
	}
	return c
}
