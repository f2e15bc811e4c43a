package measure

import (
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc/codes"

	"github.com/xdslab/xdslab/probe"
)

// Histogram geometry shared by every latency the fleet records: microseconds from 1µs to one
// hour at 3 significant digits, so shards and runs merge.
const (
	histLowest  = 1
	histHighest = int64(time.Hour / time.Microsecond)
	histDigits  = 3
)

// NewLatencyHistogram returns an empty histogram with the fleet's geometry (values in µs).
func NewLatencyHistogram() *hdr.Histogram { return hdr.New(histLowest, histHighest, histDigits) }

// recordDuration records d in µs, clamped into the histogram's range.
func recordDuration(h *hdr.Histogram, d time.Duration) {
	us := d.Microseconds()
	if us < histLowest {
		us = histLowest
	}
	if us > histHighest {
		us = histHighest
	}
	_ = h.RecordValue(us) // in range by construction
}

// TypeName is the short name of an xDS type URL: CDS, EDS, LDS, RDS, SDS, ECDS, RTDS, SRDS,
// VHDS, or the message name for any other type.
func TypeName(typeURL string) string {
	switch typeURL {
	case resource.ClusterType:
		return "CDS"
	case resource.EndpointType:
		return "EDS"
	case resource.ListenerType:
		return "LDS"
	case resource.RouteType:
		return "RDS"
	case resource.SecretType:
		return "SDS"
	case resource.ExtensionConfigType:
		return "ECDS"
	case resource.RuntimeType:
		return "RTDS"
	case resource.ScopedRouteType:
		return "SRDS"
	case resource.VirtualHostType:
		return "VHDS"
	}
	if i := strings.LastIndexByte(typeURL, '/'); i >= 0 {
		return typeURL[i+1:]
	}
	return typeURL
}

// ObserverConfig configures an Observer. Zero values take the documented defaults.
type ObserverConfig struct {
	// Shards spreads clients over this many independently locked shards (client index modulo
	// Shards); default 8. Each shard holds two latency histograms (~190 KB each).
	Shards int
	// ResendLoopAfter flags a server resend loop once a client has received this many
	// consecutive resends of a response it NACKed (same type, version, size and resource
	// count, each following the NACK of the previous one); default 3.
	ResendLoopAfter int
}

func (c ObserverConfig) withDefaults() ObserverConfig {
	if c.Shards <= 0 {
		c.Shards = 8
	}
	if c.ResendLoopAfter <= 0 {
		c.ResendLoopAfter = 3
	}
	return c
}

// Observer implements probe.Hooks: it counts what every client of a fleet sees and records latencies
// in HDR histograms. Hooks run on each client's goroutine and only lock the client's shard;
// Stats merges the shards at read time.
type Observer struct {
	cfg       ObserverConfig
	shards    []obsShard
	connected atomic.Int64
	maxConn   atomic.Int64
}

var (
	_ probe.Hooks       = (*Observer)(nil)
	_ probe.BacklogHook = (*Observer)(nil)
	_ probe.ResyncHook  = (*Observer)(nil)
)

type obsShard struct {
	mu          sync.Mutex
	clients     map[int]*obsClient
	types       map[string]*TypeStats // by type URL
	failures    map[codes.Code]uint64
	failText    map[codes.Code]string // the first failure's error text, by code
	connects    uint64
	disconnects uint64
	acks        uint64
	firstConfig uint64
	// reconnects counts streams established by clients that had one before; fullNow counts
	// the connected clients holding a full config (first full config, or resynced since their
	// last reconnect).
	reconnects uint64
	fullNow    int
	resync     *hdr.Histogram // reconnect (stream start) → full config again, µs; nil until the first
	// fullByGroup counts firstConfig by client group (probe.ClientInfo.Group).
	fullByGroup map[string]uint64
	ttfc        *hdr.Histogram // client's scheduled start → first full config, µs
	startLate   *hdr.Histogram // scheduled start → the fleet started the client, µs
	ackDelay    *hdr.Histogram // response receive → ACK/NACK written, µs
	backlog     *hdr.Histogram // response receive stamp → the client done with it, µs
	_           [64]byte       // keep shards' locks on separate cache lines
}

// obsClient is the per-client state the observer keeps (a few words per client).
type obsClient struct {
	started     time.Time
	connected   bool
	firstConfig bool
	full        bool // connected and holding a full config (counted in fullNow)
	everConn    bool
	last        []obsLast // one per type seen on the current stream
}

// obsLast remembers a client's previous response of one type, to recognise a resend after a
// NACK.
type obsLast struct {
	typeURL   string
	version   string
	bytes     int
	resources int
	nacked    bool
	streak    int
	flagged   bool
}

// NewObserver returns an empty observer.
func NewObserver(cfg ObserverConfig) *Observer {
	cfg = cfg.withDefaults()
	o := &Observer{cfg: cfg, shards: make([]obsShard, cfg.Shards)}
	for i := range o.shards {
		s := &o.shards[i]
		s.clients = make(map[int]*obsClient)
		s.types = make(map[string]*TypeStats)
		s.failures = make(map[codes.Code]uint64)
		s.failText = make(map[codes.Code]string)
		s.fullByGroup = make(map[string]uint64)
		s.ttfc = NewLatencyHistogram()
		s.startLate = NewLatencyHistogram()
		s.ackDelay = NewLatencyHistogram()
		s.backlog = NewLatencyHistogram()
	}
	return o
}

func (o *Observer) shard(index int) *obsShard {
	if index < 0 {
		index = -index
	}
	return &o.shards[index%len(o.shards)]
}

// client returns the state of client index; the shard lock must be held.
func (s *obsShard) client(index int) *obsClient {
	c := s.clients[index]
	if c == nil {
		c = &obsClient{}
		s.clients[index] = c
	}
	return c
}

func (s *obsShard) typ(typeURL string) *TypeStats {
	t := s.types[typeURL]
	if t == nil {
		t = &TypeStats{}
		s.types[typeURL] = t
	}
	return t
}

// Started records that the fleet started client index at at, due at due (its slot in the
// ramp). Time to first full config counts from due, so a ramp that fell behind (a loaded
// harness) shows in it instead of hiding (no coordinated omission); at − due is recorded as the
// start lateness. A client Started never counts from its first Connected.
func (o *Observer) Started(index int, due, at time.Time) {
	s := o.shard(index)
	s.mu.Lock()
	c := s.client(index)
	if c.started.IsZero() {
		c.started = due
		recordDuration(s.startLate, max(0, at.Sub(due)))
	}
	s.mu.Unlock()
}

// Connected implements probe.Hooks.
func (o *Observer) Connected(c probe.ClientInfo, at time.Time, attempt int) {
	index := c.Index
	s := o.shard(index)
	s.mu.Lock()
	cl := s.client(index)
	if cl.started.IsZero() {
		cl.started = at
	}
	wasConnected := cl.connected
	cl.connected = true
	cl.last = cl.last[:0]
	s.connects++
	if cl.everConn && !wasConnected {
		s.reconnects++
	}
	cl.everConn = true
	s.mu.Unlock()
	if !wasConnected {
		n := o.connected.Add(1)
		for {
			m := o.maxConn.Load()
			if n <= m || o.maxConn.CompareAndSwap(m, n) {
				break
			}
		}
	}
}

// Disconnected implements probe.Hooks.
func (o *Observer) Disconnected(c probe.ClientInfo, at time.Time, err error) {
	index := c.Index
	s := o.shard(index)
	s.mu.Lock()
	cl := s.client(index)
	was := cl.connected
	cl.connected = false
	cl.last = cl.last[:0]
	s.disconnects++
	if cl.full {
		cl.full = false
		s.fullNow--
	}
	s.mu.Unlock()
	if was {
		o.connected.Add(-1)
	}
}

// ConnectFailed implements probe.Hooks: failures are counted by gRPC status code.
func (o *Observer) ConnectFailed(c probe.ClientInfo, at time.Time, err error) {
	index := c.Index
	code := probe.FailureCode(err)
	s := o.shard(index)
	s.mu.Lock()
	s.client(index)
	s.failures[code]++
	if _, ok := s.failText[code]; !ok && err != nil {
		s.failText[code] = err.Error()
	}
	s.mu.Unlock()
}

// mergeFailText adds the shard's failure text of each code into does not hold yet; the caller
// holds s.mu.
func (s *obsShard) mergeFailText(into map[string]string) {
	for code, text := range s.failText {
		if _, ok := into[code.String()]; !ok {
			into[code.String()] = text
		}
	}
}

// Response implements probe.Hooks.
func (o *Observer) Response(c probe.ClientInfo, r probe.ResponseInfo) {
	index := c.Index
	s := o.shard(index)
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.typ(r.TypeURL)
	t.Responses++
	t.Resources += uint64(r.Resources)
	t.Removed += uint64(r.Removed)
	t.Changed += uint64(r.Changed)
	t.Bytes += uint64(r.Bytes)
	if r.NoOp {
		t.NoOp++
	}
	if r.Nacked {
		t.Nacks++
	}
	cl := s.client(index)
	var l *obsLast
	for i := range cl.last {
		if cl.last[i].typeURL == r.TypeURL {
			l = &cl.last[i]
			break
		}
	}
	if l == nil {
		cl.last = append(cl.last, obsLast{typeURL: r.TypeURL})
		l = &cl.last[len(cl.last)-1]
	} else if l.nacked && l.version == r.Version && l.bytes == r.Bytes && l.resources == r.Resources {
		// The server sent again exactly what this client just rejected.
		t.ResendsAfterNack++
		l.streak++
		if l.streak >= o.cfg.ResendLoopAfter && !l.flagged {
			l.flagged = true
			t.ResendLoops++
		}
	} else {
		l.streak, l.flagged = 0, false
	}
	l.version, l.bytes, l.resources, l.nacked = r.Version, r.Bytes, r.Resources, r.Nacked
}

// Applied implements probe.Hooks (nothing to count: Response did).
func (o *Observer) Applied(probe.ClientInfo, probe.ResponseInfo, probe.View) {}

// AckSent implements probe.Hooks: the response→ACK time includes the client's apply delay.
func (o *Observer) AckSent(c probe.ClientInfo, r probe.ResponseInfo, at time.Time) {
	s := o.shard(c.Index)
	s.mu.Lock()
	s.acks++
	recordDuration(s.ackDelay, at.Sub(r.Recv))
	s.mu.Unlock()
}

// ReceiveBacklog implements probe.BacklogHook.
func (o *Observer) ReceiveBacklog(c probe.ClientInfo, d time.Duration) {
	s := o.shard(c.Index)
	s.mu.Lock()
	recordDuration(s.backlog, d)
	s.mu.Unlock()
}

// WarmingTimeout implements probe.Hooks.
func (o *Observer) WarmingTimeout(c probe.ClientInfo, typeURL string, at time.Time) {
	s := o.shard(c.Index)
	s.mu.Lock()
	s.typ(typeURL).WarmingTimeouts++
	s.mu.Unlock()
}

// FirstFullConfig implements probe.Hooks.
func (o *Observer) FirstFullConfig(c probe.ClientInfo, at time.Time) {
	index, group := c.Index, c.Group
	s := o.shard(index)
	s.mu.Lock()
	cl := s.client(index)
	if !cl.firstConfig {
		cl.firstConfig = true
		s.firstConfig++
		s.fullByGroup[group]++
		recordDuration(s.ttfc, at.Sub(cl.started))
	}
	if !cl.full && cl.connected {
		cl.full = true
		s.fullNow++
	}
	s.mu.Unlock()
}

// Resynced implements probe.ResyncHook: a reconnected client holds a full config again.
func (o *Observer) Resynced(c probe.ClientInfo, at time.Time, d time.Duration) {
	index := c.Index
	s := o.shard(index)
	s.mu.Lock()
	cl := s.client(index)
	if s.resync == nil {
		s.resync = NewLatencyHistogram() // only a fleet that saw an outage pays for it
	}
	recordDuration(s.resync, d)
	if !cl.full && cl.connected {
		cl.full = true
		s.fullNow++
	}
	s.mu.Unlock()
}

// FullConfigByGroup returns, by client group, how many clients reached their first full config
// so far (cheap: no histogram is merged). A group none of whose clients did is absent.
func (o *Observer) FullConfigByGroup() map[string]uint64 {
	out := map[string]uint64{}
	for i := range o.shards {
		s := &o.shards[i]
		s.mu.Lock()
		for g, n := range s.fullByGroup {
			out[g] += n
		}
		s.mu.Unlock()
	}
	return out
}

// FullConfigNow returns how many connected clients hold a full config now.
func (o *Observer) FullConfigNow() int {
	n := 0
	for i := range o.shards {
		s := &o.shards[i]
		s.mu.Lock()
		n += s.fullNow
		s.mu.Unlock()
	}
	return n
}

// Live is an observer's counters at one moment, without its histograms (see Observer.Live).
type Live struct {
	Connected int
	// FullConfigNow counts the connected clients holding a full config now; FullConfig those
	// that ever reached their first (as in FleetStats).
	FullConfigNow, FullConfig uint64
	Responses, Nacks          uint64
	ConnectFailures           uint64
	// FailureText holds one error text per gRPC code that failed a connect (see
	// FleetStats.ConnectFailureText); nil when none failed.
	FailureText map[string]string
}

// Live returns the observer's counters now (cheap: no histogram is merged), for live progress.
func (o *Observer) Live() Live {
	l := Live{Connected: o.ConnectedNow()}
	for i := range o.shards {
		s := &o.shards[i]
		s.mu.Lock()
		l.FullConfigNow += uint64(max(s.fullNow, 0))
		l.FullConfig += s.firstConfig
		for _, t := range s.types {
			l.Responses += t.Responses
			l.Nacks += t.Nacks
		}
		for _, n := range s.failures {
			l.ConnectFailures += n
		}
		if len(s.failText) > 0 {
			if l.FailureText == nil {
				l.FailureText = map[string]string{}
			}
			s.mergeFailText(l.FailureText)
		}
		s.mu.Unlock()
	}
	return l
}

// ConnectedNow returns how many clients hold a stream now.
func (o *Observer) ConnectedNow() int { return int(o.connected.Load()) }

// TypeStats counts the responses of one xDS type (or of all types, in FleetStats.Total).
type TypeStats struct {
	Responses uint64 `json:"responses"`
	Resources uint64 `json:"resources"`
	Removed   uint64 `json:"removed"`
	Changed   uint64 `json:"changed"`
	Bytes     uint64 `json:"bytes"`
	// NoOp counts responses in which no resource changed for the client.
	NoOp  uint64 `json:"noop"`
	Nacks uint64 `json:"nacks"`
	// ResendsAfterNack counts responses identical to the previous one of the type, which the
	// client had NACKed; ResendLoops counts client×type streaks of ObserverConfig.ResendLoopAfter
	// such resends in a row (a server that answers a NACK by resending it).
	ResendsAfterNack uint64 `json:"resendsAfterNack"`
	ResendLoops      uint64 `json:"resendLoops"`
	WarmingTimeouts  uint64 `json:"warmingTimeouts"`
}

func (t *TypeStats) add(u TypeStats) {
	t.Responses += u.Responses
	t.Resources += u.Resources
	t.Removed += u.Removed
	t.Changed += u.Changed
	t.Bytes += u.Bytes
	t.NoOp += u.NoOp
	t.Nacks += u.Nacks
	t.ResendsAfterNack += u.ResendsAfterNack
	t.ResendLoops += u.ResendLoops
	t.WarmingTimeouts += u.WarmingTimeouts
}

// ResponsesPerNack is responses ÷ NACKs (0 without NACKs); a resend loop drives it towards 1.
func (t TypeStats) ResponsesPerNack() float64 {
	if t.Nacks == 0 {
		return 0
	}
	return float64(t.Responses) / float64(t.Nacks)
}

// FleetStats is a merged view of an Observer at one moment.
type FleetStats struct {
	Clients      int // clients the observer has seen
	Connected    int
	MaxConnected int
	Connects     uint64
	Disconnects  uint64
	// ConnectFailures counts failed connects and stream opens by gRPC code name.
	ConnectFailures map[string]uint64
	// ConnectFailureText holds, by code name, the error text of one failure with that code
	// (the first one its observer shard saw), to tell a refused connection from a timeout.
	ConnectFailureText map[string]string
	AcksSent           uint64 // ACKs and NACKs written
	// FullConfig counts clients that reached their first full config; FullConfigByGroup
	// splits it by client group (a group none of whose clients did is absent).
	FullConfig        uint64
	FullConfigByGroup map[string]uint64
	// FullConfigNow counts the connected clients that hold a full config now: their first,
	// or again after a reconnect (Resync). A disconnected client never counts.
	FullConfigNow int
	// Reconnects counts streams established by clients that had held one before.
	Reconnects uint64
	// Resync is, per reconnect, the new stream's start → the client holds a full config again
	// (µs): how long a control plane outage's tail lasts; nil when no client resynced.
	Resync *hdr.Histogram
	// Types is keyed by TypeName (CDS, EDS, ...); Total sums them.
	Types map[string]TypeStats
	Total TypeStats
	// TimeToFirstConfig (client's scheduled start → first full config) and AckDelay (response received →
	// ACK/NACK written) in µs.
	TimeToFirstConfig *hdr.Histogram
	// StartLateness is, per client, how late the fleet started it after its scheduled start
	// (µs): the harness's own lag, already inside TimeToFirstConfig.
	StartLateness *hdr.Histogram
	AckDelay      *hdr.Histogram
	// ReceiveBacklog is, per response, its receive stamp (or the end of a scripted ACK delay
	// it waited behind) → the client done with it (µs): how far behind the fleet is in reading
	// what the server sent (see BacklogHook).
	ReceiveBacklog *hdr.Histogram
}

// TypeNames lists the types in Types, sorted.
func (s FleetStats) TypeNames() []string {
	out := make([]string, 0, len(s.Types))
	for k := range s.Types {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ConnectFailuresTotal sums ConnectFailures.
func (s FleetStats) ConnectFailuresTotal() uint64 {
	var n uint64
	for _, v := range s.ConnectFailures {
		n += v
	}
	return n
}

// Stats merges every shard into one view. It locks one shard at a time, so clients keep
// running; the view is consistent per shard.
func (o *Observer) Stats() FleetStats {
	st := FleetStats{
		ConnectFailures:    map[string]uint64{},
		ConnectFailureText: map[string]string{},
		FullConfigByGroup:  map[string]uint64{},
		Types:              map[string]TypeStats{},
		TimeToFirstConfig:  NewLatencyHistogram(),
		StartLateness:      NewLatencyHistogram(),
		AckDelay:           NewLatencyHistogram(),
		ReceiveBacklog:     NewLatencyHistogram(),
	}
	for i := range o.shards {
		s := &o.shards[i]
		s.mu.Lock()
		st.Clients += len(s.clients)
		st.Connects += s.connects
		st.Disconnects += s.disconnects
		st.AcksSent += s.acks
		st.FullConfig += s.firstConfig
		st.FullConfigNow += s.fullNow
		st.Reconnects += s.reconnects
		if s.resync != nil {
			if st.Resync == nil {
				st.Resync = NewLatencyHistogram()
			}
			st.Resync.Merge(s.resync)
		}
		for g, n := range s.fullByGroup {
			st.FullConfigByGroup[g] += n
		}
		for code, n := range s.failures {
			st.ConnectFailures[code.String()] += n
		}
		s.mergeFailText(st.ConnectFailureText)
		for url, t := range s.types {
			name := TypeName(url)
			agg := st.Types[name]
			agg.add(*t)
			st.Types[name] = agg
			st.Total.add(*t)
		}
		st.TimeToFirstConfig.Merge(s.ttfc)
		st.StartLateness.Merge(s.startLate)
		st.AckDelay.Merge(s.ackDelay)
		st.ReceiveBacklog.Merge(s.backlog)
		s.mu.Unlock()
	}
	st.Connected = int(o.connected.Load())
	st.MaxConnected = int(o.maxConn.Load())
	return st
}
