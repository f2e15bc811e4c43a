package machine

import "time"

// The init manager: how an Envoy initializes and warms, as its init managers run it.
//
//	phaseCDS:       CDS requested, waiting for its first response (or initial_fetch_timeout)
//	phaseClusters:  waiting until every cluster has warmed (fresh ClusterLoadAssignment) or
//	                timed out; then LDS is requested
//	phaseLDS:       waiting for the first LDS response (or timeout)
//	phaseListeners: waiting until every listener has its routes (or timed out)
//	phaseDone:      initialized
//
// After initialization a new or changed cluster warms until its assignment arrives, a listener
// until its route configurations have, each up to the initial_fetch_timeout of the config
// source it names; meanwhile the copy it replaces stays in effect. The same goes for the SDS
// secrets their transport sockets name (sds.go). A gRPC client has no phases and does not warm.
type phase uint8

const (
	phaseCDS phase = iota
	phaseClusters
	phaseLDS
	phaseListeners
	phaseDone
)

// due is a warming deadline as Unix nanoseconds, 0 for none: the warming maps hold one per
// name, thousands in a full config, and a time.Time is three words, one a pointer.
type due int64

func dueAt(t time.Time) due {
	if t.IsZero() {
		return 0
	}
	return due(t.UnixNano())
}

// time is d as a time; zero for none.
func (d due) time() time.Time {
	if d == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(d))
}

// initState is the init manager's state.
type initState struct {
	phase         phase
	phaseDeadline time.Time
	warmC, warmL  map[string]due // warming clusters / listeners → deadline (zero: none)
	// prevC and prevL hold, per warming cluster / listener, the copy in effect while the new
	// one warms (nil: none, the resource is new). Envoy keeps serving that copy until warming
	// ends, so it is what Effective returns.
	prevC, prevL map[string]*decoded
	// secC and secL are the clusters / listeners waiting for the SDS secrets their transport
	// sockets name (→ deadline, zero: none), as Envoy's SDS init targets; a resource is
	// warming while it is in warmC/warmL or secC/secL.
	secC, secL map[string]due
	// finC and finL hold, per cluster / listener of secC / secL waiting forever for a secret,
	// the deadline of its other missing secrets, which applies once those waiting forever
	// have arrived.
	finC, finL map[string]due
	fullDone   bool // the client held a full config at least once
	// resyncing: a stream after the first full config started at resyncAt; the types in
	// resyncWait, owed an answer (wire.owed), have not answered on it yet. Once all have and
	// the configuration is complete, the client holds a full config again (Step.Resynced).
	resyncing  bool
	resyncAt   time.Time
	resyncWait uint32
	// pooled marks the warming maps taken from the fleet's pool (pooledBits), which go back
	// to it once emptied.
	pooled uint8
}

// finiteMap returns the map of finite secret deadlines of clusters (t tCDS) or listeners.
func (in *initState) finiteMap(t rtype) *map[string]due {
	if t == tLDS {
		return &in.finL
	}
	return &in.finC
}

// warmMaps returns the warming maps of clusters (t tCDS) or listeners (tLDS): on their
// dependencies, on their secrets, and the copies in effect meanwhile.
func (in *initState) warmMaps(t rtype) (warm, sec *map[string]due, prev *map[string]*decoded) {
	if t == tLDS {
		return &in.warmL, &in.secL, &in.prevL
	}
	return &in.warmC, &in.secC, &in.prevC
}

// reserve makes room, in the warming maps of clusters (t tCDS) or listeners (tLDS) that are
// empty, for warm resources warming on their dependencies and sec on their secrets (a few more
// are not worth it). The maps come from the fleet's pool (Interner.dueMap) and go back to it
// once emptied (advance).
func (m *Machine) reserve(t rtype, warm, sec int) {
	const few = 8
	in := &m.init
	w, s, _ := in.warmMaps(t)
	bw, bs := pooledBits(t)
	if len(*w) == 0 && warm > few {
		*w = m.interner.dueMap(warm)
		in.pooled |= bw
	}
	if len(*s) == 0 && sec > few {
		*s = m.interner.dueMap(sec)
		in.pooled |= bs
	}
}

// pooledBits are initState.pooled's bits of type t's warming maps: on dependencies, on secrets.
func pooledBits(t rtype) (warm, sec uint8) {
	if t == tLDS {
		return 1 << 2, 1 << 3
	}
	return 1 << 0, 1 << 1
}

// dropEmpty lets go of warming map *p when it is empty: an emptied map keeps its buckets, and
// an idle client warms nothing. One from the pool (bit set in in.pooled) goes back to it.
func (m *Machine) dropEmpty(p *map[string]due, bit uint8) {
	if *p == nil || len(*p) > 0 {
		return
	}
	if m.init.pooled&bit != 0 {
		m.init.pooled &^= bit
		m.interner.putDueMap(*p)
	}
	*p = nil
}

// prev is the map of copies in effect of warming clusters (tCDS) or listeners (tLDS).
func (in *initState) prev(t rtype) map[string]*decoded {
	_, _, p := in.warmMaps(t)
	return *p
}

// nextDeadline is the earliest deadline of a phase or a warming resource; zero when none.
func (in *initState) nextDeadline() time.Time {
	var next time.Time
	consider := func(d time.Time) {
		if !d.IsZero() && (next.IsZero() || d.Before(next)) {
			next = d
		}
	}
	if in.phase == phaseCDS || in.phase == phaseLDS {
		consider(in.phaseDeadline)
	}
	var first due
	for _, w := range []map[string]due{in.warmC, in.warmL, in.secC, in.secL} {
		for _, d := range w {
			if d != 0 && (first == 0 || d < first) {
				first = d
			}
		}
	}
	consider(first.time())
	return next
}

// firstEnvoy makes an Envoy's first subscription: CDS, waiting up to the initial fetch timeout.
func (m *Machine) firstEnvoy(now time.Time) {
	m.types[tCDS].subscribed = true
	m.init.phaseDeadline = m.deadline(now)
}

// startResync starts waiting, on a stream that starts at now after the first full config, for
// every subscribed type the server owes an answer (wire.owed: in SotW every one; in Delta those
// whose initial_resource_versions did not cover what the client holds) to answer.
func (m *Machine) startResync(now time.Time) {
	in := &m.init
	in.resyncing, in.resyncWait = in.fullDone, 0
	if !in.resyncing {
		return
	}
	in.resyncAt = now
	for t := range numTypes {
		if m.types[t].subscribed && m.wire.owed(m, t) {
			in.resyncWait |= 1 << t
		}
	}
}

// deadline returns when a bootstrap subscription (CDS, LDS) that starts waiting at now times
// out.
func (m *Machine) deadline(now time.Time) time.Time {
	if m.ift <= 0 {
		return time.Time{}
	}
	return now.Add(m.ift)
}

// sourceDeadline returns when what a config source that gives no initial_fetch_timeout serves,
// asked for at now, times out (Envoy's ConfigSource default: Config.SourceFetchTimeout).
func (m *Machine) sourceDeadline(now time.Time) time.Time {
	if m.srcIft <= 0 {
		return time.Time{}
	}
	return now.Add(m.srcIft)
}

// deadlineFor returns when a cluster or listener d that starts warming at now times out: after
// the initial_fetch_timeout of the config source it names (0s waits forever, as in Envoy), or
// after Envoy's default when that config source gives none.
func (m *Machine) deadlineFor(now time.Time, d *decoded) time.Time {
	if d == nil || !d.hasFetch {
		return m.sourceDeadline(now)
	}
	if d.fetchTimeout <= 0 {
		return time.Time{}
	}
	return now.Add(d.fetchTimeout)
}

// warmStored puts a new or changed cluster or listener d into warming; old is the copy it
// replaces (nil: none), which stays in effect until d has warmed. gRPC clients do not warm.
//
// A cluster warms when a ClusterLoadAssignment for it arrives. In Delta the client cannot ask
// again for an assignment it already watches, and the one it holds is used only when the
// cluster's initial_fetch_timeout expires (Envoy's EDS resources cache, used on FetchTimedout
// only): until then the cluster waits for the server to send one.
func (m *Machine) warmStored(t rtype, name string, d, old *decoded, now time.Time) {
	if m.grpc || !t.wildcard() {
		return
	}
	m.warmSecrets(t, name, d, old, now)
	warm, _, _ := m.init.warmMaps(t)
	ready := len(d.refs) == 0 // a cluster without EDS
	if t == tLDS {
		ready = m.hasRoutes(d.refs)
	}
	if ready {
		delete(*warm, name)
		return
	}
	if *warm == nil {
		*warm = make(map[string]due)
	}
	m.keepPrev(t, name, old)
	(*warm)[name] = dueAt(m.deadlineFor(now, d))
}

// unwarm drops a deleted cluster or listener from warming.
func (m *Machine) unwarm(t rtype, name string) {
	if !t.wildcard() {
		return
	}
	warm, sec, _ := m.init.warmMaps(t)
	delete(*warm, name)
	delete(*sec, name)
}

// warming reports whether cluster (t tCDS) or listener (tLDS) name is warming, on its
// dependencies or on its SDS secrets.
func (m *Machine) warming(t rtype, name string) bool {
	warm, sec, _ := m.init.warmMaps(t)
	_, w := (*warm)[name]
	_, ws := (*sec)[name]
	return w || ws
}

// keepPrev records, for a cluster or listener that starts warming, the copy that stays in
// effect meanwhile (nil: it is new, kept as no entry: a whole new config warms without a map of
// nils). A resource already warming keeps its first copy.
func (m *Machine) keepPrev(t rtype, name string, old *decoded) {
	_, _, prev := m.init.warmMaps(t)
	if old == nil && len(*prev) == 0 {
		return // nothing to keep or drop (a whole new config)
	}
	if m.warming(t, name) {
		return
	}
	if old == nil {
		delete(*prev, name)
		return
	}
	if *prev == nil {
		*prev = make(map[string]*decoded)
	}
	(*prev)[name] = old
}

func (m *Machine) hasRoutes(refs []string) bool {
	for _, r := range refs {
		if _, ok := m.types[tRDS].res[r]; !ok {
			return false
		}
	}
	return true
}

// warmByContent ends the warming an accepted EDS, RDS or SDS response ends: a
// ClusterLoadAssignment received (even unchanged) warms its clusters, a removed one means "does
// not exist" and warms them too; route configurations warm the listeners that have them all;
// secrets the resources that have them all.
func (m *Machine) warmByContent(u *update, now time.Time) {
	switch u.t {
	case tEDS:
		if len(m.init.warmC) == 0 {
			break
		}
		// Every warming cluster is one of the clusters held that reference an assignment: a
		// response (from the codec's memo) that names every assignment they reference, with
		// none of its items in error, warms them all.
		if u.run != nil && u.itemErrs == 0 && len(u.removed) == 0 && u.run.covers(m.types[tCDS].set) {
			clear(m.init.warmC)
			break
		}
		if len(m.init.warmC) < len(u.items)+len(u.removed) {
			// Few clusters warm (a steady-state change): index them, not the response.
			waiting := make(map[string][]string, len(m.init.warmC)) // EDS name → clusters
			for c := range m.init.warmC {
				if e, ok := m.types[tCDS].res[c]; ok && len(e.refs()) > 0 {
					waiting[e.refs()[0]] = append(waiting[e.refs()[0]], c)
				}
			}
			warm := func(name string) {
				for _, c := range waiting[name] {
					delete(m.init.warmC, c)
				}
			}
			for i := range u.items {
				if u.st[i].err == nil {
					warm(u.items[i].name)
				}
			}
			for _, name := range u.removed {
				warm(name)
			}
			break
		}
		warmed := make(map[string]struct{}, len(u.items)+len(u.removed))
		for i := range u.items {
			if u.st[i].err == nil {
				warmed[u.items[i].name] = struct{}{}
			}
		}
		for _, name := range u.removed {
			warmed[name] = struct{}{}
		}
		for c := range m.init.warmC {
			if e, ok := m.types[tCDS].res[c]; ok && len(e.refs()) > 0 {
				if _, ok := warmed[e.refs()[0]]; ok {
					delete(m.init.warmC, c)
				}
			}
		}
	case tRDS:
		for l := range m.init.warmL {
			if m.hasRoutes(m.types[tLDS].res[l].refs()) {
				delete(m.init.warmL, l)
			}
		}
	case tSDS:
		m.rewarmSecrets(now)
	}
}

// afterResponse advances initialization after a response of type t.
func (m *Machine) afterResponse(s *Step, t rtype, now time.Time) {
	in := &m.init
	if (in.phase == phaseCDS && t == tCDS) || (in.phase == phaseLDS && t == tLDS) {
		in.phase++
	}
	in.resyncWait &^= 1 << t
	m.advance(s, now)
}

// expireInit ends, at now, a phase waiting past its initial fetch timeout and the warming of
// clusters and listeners past theirs.
func (m *Machine) expireInit(s *Step, now time.Time) {
	in := &m.init
	if (in.phase == phaseCDS || in.phase == phaseLDS) && !in.phaseDeadline.IsZero() && !now.Before(in.phaseDeadline) {
		if in.phase == phaseCDS {
			s.Timeouts = append(s.Timeouts, tCDS.url())
		} else {
			s.Timeouts = append(s.Timeouts, tLDS.url())
		}
		in.phase++
	}
	if expire(in.warmC, now) {
		s.Timeouts = append(s.Timeouts, tEDS.url())
	}
	if expire(in.warmL, now) {
		s.Timeouts = append(s.Timeouts, tRDS.url())
	}
}

func expire(w map[string]due, now time.Time) bool {
	any := false
	n := dueAt(now)
	for k, d := range w {
		if d != 0 && d <= n {
			delete(w, k)
			any = true
		}
	}
	return any
}

// advance moves initialization forward as far as it can go and reports the first full config.
func (m *Machine) advance(s *Step, now time.Time) {
	in := &m.init
	for _, t := range []rtype{tCDS, tLDS} {
		warm, sec, prev := in.warmMaps(t)
		bw, bs := pooledBits(t)
		m.dropEmpty(warm, bw)
		m.dropEmpty(sec, bs)
		if *warm == nil && *sec == nil {
			*prev = nil
		}
	}
	if in.phase == phaseClusters && len(in.warmC) == 0 && len(in.secC) == 0 {
		in.phase = phaseLDS
		in.phaseDeadline = m.deadline(now)
		m.types[tLDS].subscribed = true
		m.wire.restate(m, s, tLDS)
	}
	if in.phase == phaseListeners && len(in.warmL) == 0 && len(in.secL) == 0 {
		in.phase = phaseDone
	}
	if in.phase == phaseDone && !in.fullDone && m.complete() {
		in.fullDone = true
		s.FirstFull = true
	}
	m.checkResync(s, now)
}

// checkResync reports, once per stream, that the client holds a full config again: every type
// owed an answer has answered and the configuration is complete.
func (m *Machine) checkResync(s *Step, now time.Time) {
	in := &m.init
	if in.resyncing && in.resyncWait == 0 && in.phase == phaseDone && m.complete() {
		in.resyncing = false
		s.Resynced, s.Resync = true, max(0, now.Sub(in.resyncAt))
	}
}

// complete reports whether the client holds a whole warmed configuration: CDS and LDS
// accepted, every EDS cluster with its assignment, every listener with its routes (for a gRPC
// client: every target's listener, its routes, their clusters and those clusters' assignments).
func (m *Machine) complete() bool {
	if m.grpc {
		return m.completeGRPC()
	}
	in := &m.init
	if !m.types[tCDS].accepted || !m.types[tLDS].accepted || len(in.warmC) > 0 || len(in.warmL) > 0 || len(in.secC) > 0 || len(in.secL) > 0 {
		return false
	}
	c, e, l, r := &m.types[tCDS], &m.types[tEDS], &m.types[tLDS], &m.types[tRDS]
	return refsIn(c.set, c.res, e.set, e.res) && refsIn(l.set, l.res, r.set, r.res)
}

func (m *Machine) completeGRPC() bool {
	for _, l := range m.targets {
		e, ok := m.types[tLDS].res[l]
		if !ok || !m.hasRoutes(e.refs()) {
			return false
		}
		for _, r := range e.refs() {
			for _, c := range m.types[tRDS].res[r].refs() {
				ce, ok := m.types[tCDS].res[c]
				if !ok {
					return false
				}
				for _, a := range ce.refs() {
					if _, ok := m.types[tEDS].res[a]; !ok {
						return false
					}
				}
			}
		}
	}
	return true
}
