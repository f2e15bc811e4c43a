package machine

import (
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"time"

	"github.com/xdslab/xdslab/fakeenvoy/validate"
	"github.com/xdslab/xdslab/probe"
)

// apply validates and applies one update and fills s with the decision, follow-up requests and
// init progress. The ACK/NACK itself is the wire adapter's.
func (m *Machine) apply(s *Step, u *update, now time.Time) {
	t := u.t
	ts := &m.types[t]
	s.Info.Fresh = !ts.accepted
	s.Info.First = !ts.received
	ts.received = true
	realistic := m.nack.Realistic
	mode := checkNone
	switch {
	case m.grpc:
		mode = checkGRPC // grpc-go's rules (validate.GRPC)
	case realistic:
		mode = checkEnvoy // Envoy's (rules.go)
	}

	// Response-level checks: they reject everything. A SotW CDS or LDS response naming a
	// resource twice is not one of them: its later copies are rejected one by one (dupItems).
	respErr := u.err
	dupItems := realistic && u.full && !m.grpc
	if respErr == nil && realistic && !dupItems && !(u.distinct && len(u.removed) == 0) {
		respErr = envoyResponseErr(t, u.items, u.removed) // duplicates: none when distinct
	}
	if err := m.policyErr(); respErr == nil {
		respErr = err // the policy draws its chance for every response, rejected or not
	}

	// Per-resource decoding and checks.
	items := u.items
	u.st = m.interner.itemStates(len(items))
	defer func() {
		m.interner.putItemStates(u.st)
		u.st = nil
	}()
	st := u.st
	var itemErrs []string
	decodeFailed := "" // the first resource Envoy fails to decode
	// A full response drops what it lacks. With distinct names, counting the held names it
	// names tells whether it lacks any, without a map of what it holds.
	countHeld := u.full && u.distinct
	heldNamed := 0
	// changed resources that may start warming: on what they reference, on their secrets
	withRefs, withSecrets := 0, 0
	var present map[string]struct{} // a full response: what it holds
	if u.full && !countHeld {
		present = make(map[string]struct{}, len(items))
	}
	// A named type's subscription is, as followUp makes it, the references of another type's
	// shared set: whether a run names only those is known once per run and set.
	lookUp := m.wire.named(t) && !(ts.subscribed && u.run != nil && u.run.namesIn(m.namesSet(t)))
	// The bootstrap clusters a run's secrets name are found once per run: when the agent serves
	// them all, no resource of it names a source Envoy would reject.
	sourcesServed := u.run != nil && m.agentServesAll(u.run.secretClusters())
	for i := range items {
		it, is := &items[i], &st[i]
		if present != nil {
			n := len(present)
			present[it.name] = struct{}{}
			if len(present) == n && dupItems {
				// CdsApiHelper, LdsApiImpl: the first copy applied, this one an error
				is.err = fmt.Errorf("duplicate %s %s found", t.kind(), it.name)
				u.itemErrs++
				itemErrs = append(itemErrs, fmt.Sprintf("%s %s: %v", t.kind(), it.name, is.err))
				continue
			}
		}
		if lookUp && !m.subscribedName(t, it.name) {
			if countHeld {
				if _, ok := ts.res[it.name]; ok {
					heldNamed++
				}
			}
			is.err = errIgnored // unrequested names: ignored, as Envoy and grpc-go do
			u.itemErrs++
			if mode == checkEnvoy && !u.versions && it.hit == nil && decodeFailed == "" {
				// Envoy's SotW mux decodes every resource, watched or not, first.
				if err := m.sotwDecodeErr(t, it); err != nil {
					decodeFailed = fmt.Sprintf("%s %s: %v", t.kind(), it.name, err)
				}
			}
			continue
		}
		hash := it.hash
		if !it.hashed {
			hash = maphash.Bytes(hashSeed, it.raw)
		}
		held, ok := ts.res[it.name]
		if ok && countHeld {
			heldNamed++
		}
		if ok && held.d.hash == hash {
			continue // identical: skipped
		}
		s.Info.Changed++
		if m.nack.MatchName(it.name) {
			is.err = fmt.Errorf("rejected by policy: name matches %q", m.nack.NamePattern)
		} else if it.hit != nil {
			is.d = it.hit
		} else {
			is.d, is.err = m.interner.decode(t, mode, hash, it.name, it.raw)
		}
		if is.err == nil && mode == checkEnvoy && !sourcesServed && len(is.d.secrets) > 0 {
			if err := m.secretSourceErr(is.d); err != nil {
				is.d, is.err = nil, err
			}
		}
		if is.err == nil && ok && held.d.size == is.d.size && sameAs(is.d, held.d) {
			is.d = nil // the held resource in other bytes (maps in another order): identical
			s.Info.Changed--
			continue
		}
		if is.err == nil && is.d.heavy && m.hashClusterOf(it.name) {
			is.d, is.err = nil, validate.ErrHashWeights
		}
		if is.err != nil {
			u.itemErrs++
			msg := fmt.Sprintf("%s %s: %v", t.kind(), it.name, is.err)
			if _, ok := is.err.(decodeErr); ok && !m.grpc && decodeFailed == "" {
				decodeFailed = msg // Envoy rejects the whole response (see decodeErr)
			}
			itemErrs = append(itemErrs, msg)
		} else {
			withRefs += min(1, len(is.d.refs))
			withSecrets += min(1, len(is.d.secrets))
		}
	}

	if decodeFailed != "" && respErr == nil {
		respErr = errors.New(decodeFailed)
	}
	if realistic && t == tLDS && respErr == nil {
		itemErrs = append(itemErrs, m.addressConflicts(items, st, u.removed, u.full)...)
	}

	// Deletions: a full response drops what it lacks; Delta drops removed_resources.
	var gone []string
	if u.full && !(countHeld && heldNamed == len(ts.res)) {
		if present == nil {
			present = make(map[string]struct{}, len(items))
			for i := range items {
				present[items[i].name] = struct{}{}
			}
		}
		for name := range ts.res {
			if _, ok := present[name]; !ok {
				gone = append(gone, name)
			}
		}
	} else {
		for _, name := range u.removed {
			if _, ok := ts.res[name]; ok {
				gone = append(gone, name)
			}
		}
	}
	s.Info.Removed = len(gone)
	if u.versions {
		s.Info.Removed = len(u.removed) // as on the wire; NoOp counts only what was held
	}
	s.Info.NoOp = s.Info.Changed == 0 && len(gone) == 0

	nacked := respErr != nil || len(itemErrs) > 0
	if nacked {
		s.Info.Nacked = true
		msgs := itemErrs
		if respErr != nil {
			msgs = []string{respErr.Error()}
		}
		s.Info.Error = joinErrors(msgs)
	}
	if respErr != nil || (len(itemErrs) > 0 && !m.appliesPartly(t)) {
		m.afterResponse(s, t, now)
		return
	}
	// A whole config from nothing, read from the codec's memo: every client that applies the
	// same run to an empty state ends with the same set and the same touched list (see
	// respEntry.fresh). The first builds them below; the others adopt them, and only warm.
	fresh := u.run != nil && u.distinct && len(u.removed) == 0 && !u.versions && !nacked && u.itemErrs == 0 &&
		len(ts.res) == 0 && m.interner != nil
	_, follows := m.wire.dependent(t)
	if t.wildcard() && !m.grpc {
		m.reserve(t, withRefs, withSecrets) // a whole config: maps grow once, not by doubling
	}
	if fresh {
		if set, touched, ok := u.run.freshApplied(follows); ok {
			s.Info.Touched = touched
			for i := range items {
				if d := st[i].d; d != nil {
					m.warmStored(t, heldName(&items[i], d), d, nil, now)
				}
			}
			ts.set, ts.res = set, set.m
			m.afterApply(s, t, u, len(touched) > 0, nacked, now)
			return
		}
	}
	// The changes, applied by commit below (see resset.go). With distinct names and no
	// removed_resources each name changes once: gone holds names the items lack.
	ed := newEdits(ts.res, s.Info.Changed+len(gone))
	if u.distinct && len(u.removed) == 0 {
		ed = newOnceEdits(ts.res, s.Info.Changed+len(gone))
		if n := s.Info.Changed + len(gone); n > 0 && n <= cap(m.editList) {
			ed.list = m.editList[:0] // commit keeps none of it (the interner copies what it keeps)
		}
	}
	// The touched list is built in the machine's scratch, then reported as a list of its own
	// or one the memo's run shares (shareTouched).
	touched := m.touched[:0]
	changed := false
	for i := range items {
		it, is := &items[i], &st[i]
		if is.err != nil {
			continue
		}
		if is.d == nil { // identical
			if !nacked && u.versions {
				e, _ := ed.get(it.name)
				e.version = it.version
				ed.put(it.name, e)
			}
			continue
		}
		version := it.version
		if nacked {
			version = "" // Envoy records Delta versions only when the whole response is accepted
		}
		name := heldName(it, is.d)
		held, _ := ed.get(name)
		old := held.d
		if t == tLDS && old != nil {
			m.noteDrainedSecrets(old) // the replaced copy drains with its secrets
		}
		ed.put(name, entry{version: version, d: is.d})
		changed = true
		touched = append(touched, probe.Touched{Name: name, Prev: old.message()})
		m.warmStored(t, name, is.d, old, now)
	}
	for _, name := range gone {
		held, _ := ed.get(name)
		if t == tLDS {
			m.noteDrainedSecrets(held.d)
		}
		touched = append(touched, probe.Touched{Name: name, Prev: held.d.message()})
		ed.del(name)
		changed = true
		m.unwarm(t, name)
	}
	s.Info.Touched = m.shareTouched(u, touched, s.Info.Changed+len(gone), fresh)
	m.commit(t, ed)
	if ed.list != nil && cap(ed.list) <= maxEditList {
		clear(ed.list)
		m.editList = ed.list[:0]
	}
	if fresh && ts.set != nil {
		u.run.keepFreshApplied(follows, ts.set, s.Info.Touched)
	}
	m.afterApply(s, t, u, changed, nacked, now)
}

// shareTouched returns the touched list a response reports, from touched (built in
// m.touched, which it takes back for the next response); n is how many resources the response
// changed or removed (the list is nil when none, else not). A push's run read from the memo
// (u.run), applied to a held state, is applied alike by every client holding the same copies:
// they report the list the run keeps when equal (see respEntry.touched). A fresh apply's list
// is kept by the run as it is (keepFreshApplied), and one without a run is the response's own:
// each is a copy.
func (m *Machine) shareTouched(u *update, touched []probe.Touched, n int, fresh bool) []probe.Touched {
	var out []probe.Touched
	switch {
	case n == 0:
	case len(touched) == 0:
		out = []probe.Touched{}
	case u.run != nil && !fresh:
		out = u.run.shareTouched(touched)
	default:
		out = slices.Clone(touched)
	}
	clear(touched)
	if cap(touched) <= maxEditList {
		m.touched = touched[:0]
	}
	return out
}

// afterApply finishes applying an update whose changes (changed: any) are committed.
func (m *Machine) afterApply(s *Step, t rtype, u *update, changed, nacked bool, now time.Time) {
	if !nacked {
		m.types[t].accepted = true
	}
	m.warmByContent(u, now)
	if changed {
		s.Applied = true
		m.followUp(s, t, now)
		if t.wildcard() {
			m.followUpSecrets(s, now)
			if m.secretsGained { // secrets the agent served at once
				m.rewarmSecrets(now)
			}
		}
	}
	m.afterResponse(s, t, now)
}

var errIgnored = fmt.Errorf("not subscribed")

// maxEditList bounds the list of edits a machine keeps for its next response (Machine.editList):
// a steady push changes a few resources; a full config's thousands are not kept.
const maxEditList = 16

// heldName is the name a changed item, decoded as d, is held under: d's, the shared copy, when
// equal (the per-response one then becomes garbage).
func heldName(it *item, d *decoded) string {
	if d.name == it.name {
		return d.name
	}
	return it.name
}

func joinErrors(msgs []string) string {
	const max = 5
	if len(msgs) > max {
		return strings.Join(msgs[:max], "; ") + fmt.Sprintf("; and %d more", len(msgs)-max)
	}
	return strings.Join(msgs, "; ")
}
