package h2client

import (
	"bytes"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"weak"
)

// Shared lets the streams of many connections hold one copy of a large message that reaches
// them all with the same bytes: a control plane's push of a full config to a fleet of
// sidecars. Without it, every stream keeps the receive buffers its message's frames lie in
// until the whole message is there, and a thousand clients receiving a MB together hold a GB.
//
// The first stream whose message starts with a given KiB starts a shared copy and writes its
// pieces into it as they arrive; a stream whose message starts with the same KiB follows the
// copy, comparing each piece with the bytes already there and writing those not yet there,
// and keeps no receive buffer for any of them. A stream whose bytes differ from the copy's in
// its last sharedTail bytes (a response's nonce) keeps its pieces from there on as usual, and
// its message is the copy's bytes up to there followed by its own. One that differs earlier
// (the next push's full config, with a service added half way; one namespace's variant of a
// push) goes on with the copy of the same start that its bytes continue, or forks one: the
// copy's bytes up to there, then its own. A copy no stream follows costs its owner one copy
// of its message (Stats), so copies are started for only one message in probeEvery while the
// recent ones had no follower.
//
// Safe for concurrent use. A fleet shares one among its connections (Config.Shared).
type Shared struct {
	seed maphash.Seed

	mu sync.Mutex
	m  map[uint64]*sharedMsg
	// recent are the copies the map holds, least recently joined first, and bytes their
	// capacity: at most sharedMaxMsgs copies and sharedMaxBytes (a stream that follows one
	// keeps it alive until its message is delivered, whether the map still holds it or not).
	recent []*sharedMsg
	bytes  int
	// lonely counts the copies that left recent without a follower since the last that had
	// one; skipped counts the messages that started no copy since.
	lonely, skipped int

	started, forked, followed, diverged atomic.Int64
}

// SharedStats counts what Shared did.
type SharedStats struct {
	// Started is how many copies streams started, Forked how many of them began as another
	// copy's first bytes; Followed is how many messages were a copy's bytes to their end (the
	// starter's own among them), Diverged how many kept their own bytes from part way (their
	// tail, or no copy to go on with).
	Started, Forked, Followed, Diverged int64
}

const (
	// sharedMinMsg is the shortest message that is shared: a few frames.
	sharedMinMsg = 64 << 10
	// sharedKeyLen is how many of a message's first bytes find its copy.
	sharedKeyLen = 1 << 10
	// sharedSlack is how much longer than its starter's message a copy is: the messages of
	// one push differ in length by their nonces.
	sharedSlack = 256
	// sharedTail: a message that differs from its copy no further than this from its end
	// keeps its own bytes from there (a response's nonce and version); one that differs
	// earlier goes on with another copy of the same start, or forks one.
	sharedTail = 32 << 10
	// sharedMaxMsgs and sharedMaxBytes bound the copies the map holds: a push can send a
	// variant of its full config to each namespace's sidecars, all at once.
	sharedMaxMsgs  = 64
	sharedMaxBytes = 128 << 20
	// sharedMaxForks bounds the forks a copy keeps (a push's variants, one per namespace, say).
	sharedMaxForks = 16
	// After lonelyLimit copies in a row without a follower, only one message in probeEvery
	// starts one.
	lonelyLimit = 4
	probeEvery  = 16
)

// NewShared returns an empty Shared.
func NewShared() *Shared { return &Shared{seed: maphash.MakeSeed(), m: map[uint64]*sharedMsg{}} }

// Stats returns the counts so far.
func (s *Shared) Stats() SharedStats {
	return SharedStats{Started: s.started.Load(), Forked: s.forked.Load(), Followed: s.followed.Load(), Diverged: s.diverged.Load()}
}

// sharedMsg is one shared copy. buf never changes length; buf[:n] are the bytes written so
// far, which never change either: a writer copies its bytes past n, then raises n.
type sharedMsg struct {
	key       uint64
	buf       []byte
	n         atomic.Int64
	mu        sync.Mutex // one writer at a time; guards forks
	followers atomic.Int64
	// A fork's bytes are its parent's up to forkOff, and differ in the frame there. Frames
	// split a message alike on every connection, so the streams that leave a copy for the same
	// other message leave it at the same offset: forks finds a copy they can go on with.
	parent  weak.Pointer[sharedMsg]
	forkOff int
	forks   []*sharedMsg // the newest sharedMaxForks
}

// join returns the copy for a message of msgLen bytes whose first piece is first: the one
// that starts with the same bytes, or a new one; nil when the message is too short to share,
// its first piece shorter than the key, or no copy is started for it.
func (s *Shared) join(first []byte, msgLen int) *sharedMsg {
	if s == nil || msgLen < sharedMinMsg || len(first) < sharedKeyLen {
		return nil
	}
	key := maphash.Bytes(s.seed, first[:sharedKeyLen])
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.m[key]; m != nil {
		m.followers.Add(1)
		// The most recently joined last: the copies of a push's variants (one per namespace,
		// say) stay while the push reaches the fleet.
		if i := slices.Index(s.recent, m); i >= 0 {
			s.recent = append(slices.Delete(s.recent, i, i+1), m)
		}
		return m
	}
	if s.lonely >= lonelyLimit {
		if s.skipped++; s.skipped < probeEvery {
			return nil
		}
	}
	s.skipped = 0
	m := &sharedMsg{key: key, buf: make([]byte, msgLen+sharedSlack)}
	s.addLocked(m)
	s.started.Add(1)
	return m
}

// addLocked makes m the copy for its key (the newest), and lets the oldest copies go while
// there are too many; s.mu is held.
func (s *Shared) addLocked(m *sharedMsg) {
	s.m[m.key] = m
	s.recent = append(s.recent, m)
	s.bytes += len(m.buf)
	for len(s.recent) > sharedMaxMsgs || (s.bytes > sharedMaxBytes && len(s.recent) > 1) {
		old := s.recent[0]
		s.recent[0] = nil
		s.recent = s.recent[1:]
		s.bytes -= len(old.buf)
		if s.m[old.key] == old {
			delete(s.m, old.key)
		}
		if old.followers.Load() == 0 {
			s.lonely++
		} else {
			s.lonely = 0
		}
	}
}

// diverge returns the copy a stream goes on with whose piece b, at off, differs from c (its
// bytes before off are c's): nil, to keep its own bytes from off, when it differs in its
// tail; else one of the variants of c at off that goes on as b does, or a new one. The
// variants at off are a base copy (c, or the ancestor c and its ancestors forked from at off)
// and the base's forks at off: the other messages of a push that differ there (one per
// namespace, say), or the push before. A new variant is a fork of the base: its bytes up to
// off, then b.
func (s *Shared) diverge(c *sharedMsg, off int, b []byte, msgLen int) *sharedMsg {
	if msgLen-off <= sharedTail {
		return nil
	}
	base := c
	for base.forkOff == off {
		p := base.parent.Value()
		if p == nil {
			break
		}
		base = p
	}
	for _, e := range append(base.forksAt(off), base) {
		if e != c && e.follow(off, b) {
			e.followers.Add(1)
			return e
		}
	}
	// Frames that split the message elsewhere on another connection: the newest other copies
	// of the same start, compared from their first byte.
	var others [2]*sharedMsg
	n := 0
	s.mu.Lock()
	for i := len(s.recent) - 1; i >= 0 && n < len(others); i-- {
		if e := s.recent[i]; e != c && e != base && e.key == c.key {
			others[n] = e
			n++
		}
	}
	s.mu.Unlock()
	for _, e := range others[:n] {
		if e.startsAs(c, off) && e.follow(off, b) {
			e.followers.Add(1)
			return e
		}
	}
	f := &sharedMsg{key: c.key, buf: make([]byte, max(msgLen+sharedSlack, off+len(b))), parent: weak.Make(base), forkOff: off}
	copy(f.buf, c.buf[:off])
	f.n.Store(int64(off))
	if !f.follow(off, b) {
		return nil
	}
	base.mu.Lock()
	base.forks = append(base.forks, f)
	if len(base.forks) > sharedMaxForks {
		base.forks = slices.Delete(base.forks, 0, 1)
	}
	base.mu.Unlock()
	s.mu.Lock()
	s.addLocked(f)
	s.mu.Unlock()
	s.started.Add(1)
	s.forked.Add(1)
	return f
}

// startsAs reports whether m's first off bytes are c's (which holds at least off), writing
// c's where m holds fewer.
func (m *sharedMsg) startsAs(c *sharedMsg, off int) bool {
	if off > len(m.buf) {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := int(m.n.Load())
	k := min(n, off)
	if !bytes.Equal(m.buf[:k], c.buf[:k]) {
		return false
	}
	if n < off {
		copy(m.buf[n:off], c.buf[n:off])
		m.n.Store(int64(off))
	}
	return true
}

// forksAt returns m's forks at off.
func (m *sharedMsg) forksAt(off int) []*sharedMsg {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*sharedMsg
	for _, f := range m.forks {
		if f.forkOff == off {
			out = append(out, f)
		}
	}
	return out
}

// follow reports whether b is the copy's bytes from off (where the stream's bytes so far
// matched it), writing those past what the copy holds; false when they differ, or would not
// fit.
func (m *sharedMsg) follow(off int, b []byte) bool {
	n := int(m.n.Load())
	if off > n {
		return false
	}
	k := min(len(b), n-off)
	if !bytes.Equal(m.buf[off:off+k], b[:k]) {
		return false
	}
	if k == len(b) {
		return true
	}
	if off+len(b) > len(m.buf) {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// Other streams may have written meanwhile.
	n = int(m.n.Load())
	if k2 := min(len(b), n-off); k2 > k {
		if !bytes.Equal(m.buf[off+k:off+k2], b[k:k2]) {
			return false
		}
		k = k2
	}
	if k < len(b) {
		copy(m.buf[off+k:], b[k:])
		m.n.Store(int64(off + len(b)))
	}
	return true
}

// prefix is the copy's first n bytes, which a stream's own matched (n is at most what the
// copy holds).
func (m *sharedMsg) prefix(n int) []byte { return m.buf[:n:n] }
