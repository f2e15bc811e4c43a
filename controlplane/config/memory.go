package config

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xdslab/xdslab/internal/cow"
	"github.com/xdslab/xdslab/istioconfig"
)

// MemoryOptions configure a Memory store. The zero value is valid.
type MemoryOptions struct {
	// Now stamps CreationTimestamp on objects created without one. Default time.Now.
	Now func() time.Time
	// CoalesceAbove is the backlog length (undelivered events) above which a new event for a
	// key that already has an undelivered event is merged into that event instead of queued
	// behind it. Default 4096; a negative value coalesces always. See the package doc.
	CoalesceAbove int
}

const defaultCoalesceAbove = 4096

// Memory is an in-memory Store with an event stream for one consumer.
//
// Writers never block on the consumer: every write appends its event to a backlog under the
// same lock that changes the map, so the backlog is in write order. One goroutine (Run) moves
// events from the backlog to the channel returned by Events. Below CoalesceAbove undelivered
// events every write is delivered as its own event; above it, a write to a key that still has
// an undelivered event merges into it (add+update → add, update+update → update with the first
// Old and the last New, add+delete → nothing, update+delete → delete of the first Old,
// delete+add → update). The merged event says exactly what changed between what the consumer
// last saw and the current value, so nothing is lost and per-key order holds; the backlog is
// then bounded by CoalesceAbove plus the number of keys.
type Memory struct {
	now           func() time.Time
	coalesceAbove int

	mu sync.Mutex
	// objects is the current version; ed, during a write (under mu), its edit.
	objects cow.Map[istioconfig.Key, *istioconfig.Config]
	ed      *cow.Edit[istioconfig.Key, *istioconfig.Config]
	rv      uint64
	// backlog holds undelivered events from head on; a nil entry was cancelled by coalescing.
	backlog   []*Event
	head      int
	live      int                        // non-nil entries in backlog[head:]
	taken     uint64                     // events pop handed to Run for delivery, in all
	lastByKey map[istioconfig.Key]*Event // the newest undelivered event of each key
	coalesced uint64
	running   bool

	wake   chan struct{} // capacity 1: a write happened
	events chan Event
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty store. Call Run to deliver events.
func NewMemory(opts MemoryOptions) *Memory {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.CoalesceAbove == 0 {
		opts.CoalesceAbove = defaultCoalesceAbove
	}
	return &Memory{
		now:           opts.Now,
		coalesceAbove: opts.CoalesceAbove,
		objects:       cow.New[istioconfig.Key, *istioconfig.Config](),
		lastByKey:     make(map[istioconfig.Key]*Event),
		wake:          make(chan struct{}, 1),
		events:        make(chan Event),
	}
}

// Events is the stream of changes for the one consumer, in write order per key (and across
// keys, unless coalesced). It is closed when Run returns. Events written before the consumer
// starts reading are kept, so a consumer that only applies events sees every object.
func (m *Memory) Events() <-chan Event { return m.events }

// Run delivers events until ctx is done, then closes the Events channel. Call it once.
// Events still in the backlog when ctx ends are not delivered.
func (m *Memory) Run(ctx context.Context) error {
	m.mu.Lock()
	if m.running {
		m.mu.Unlock()
		return fmt.Errorf("config.Memory: Run called twice")
	}
	m.running = true
	m.mu.Unlock()
	defer close(m.events)
	for {
		ev, ok := m.pop()
		if !ok {
			select {
			case <-m.wake:
				continue
			case <-ctx.Done():
				return nil
			}
		}
		// Popped before sending so that a coalescing write never changes an event that is
		// already on its way.
		select {
		case m.events <- ev:
		case <-ctx.Done():
			return nil
		}
	}
}

// Pending is the number of undelivered events.
func (m *Memory) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live
}

// Backlog is the number of undelivered events and the number of events taken for delivery so
// far, read together: a consumer that has applied that many events, with none undelivered,
// has seen every write made before the call.
func (m *Memory) Backlog() (pending int, taken uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live, m.taken
}

// Coalesced is the number of writes merged into an undelivered event (see the type doc).
func (m *Memory) Coalesced() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.coalesced
}

// Len is the number of stored objects.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.objects.Len()
}

func (m *Memory) pop() (Event, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.head < len(m.backlog) {
		e := m.backlog[m.head]
		m.backlog[m.head] = nil
		m.head++
		if e == nil {
			continue
		}
		m.live--
		m.taken++
		if m.lastByKey[e.Key()] == e {
			delete(m.lastByKey, e.Key())
		}
		if m.head > 1024 && m.head*2 > len(m.backlog) {
			m.backlog = slices.Clone(m.backlog[m.head:])
			m.head = 0
		}
		ev := *e
		ev.State = &Version{m: m.objects}
		m.ed = nil // the version is shared now: the next write copies the shards it touches
		return ev, true
	}
	m.backlog, m.head = m.backlog[:0], 0
	return Event{}, false
}

// Get implements Store.
func (m *Memory) Get(key istioconfig.Key) (*istioconfig.Config, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.objects.Get(key)
}

// List implements Store.
func (m *Memory) List(kind istioconfig.Kind, namespace string) []*istioconfig.Config {
	m.mu.Lock()
	var out []*istioconfig.Config
	m.objects.Range(func(k istioconfig.Key, c *istioconfig.Config) bool {
		if k.Kind == kind && (namespace == "" || k.Namespace == namespace) {
			out = append(out, c)
		}
		return true
	})
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b *istioconfig.Config) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out
}

// All returns every object, sorted by kind (istioconfig.Kinds order), namespace and name: the
// input of a full snapshot build.
func (m *Memory) All() []*istioconfig.Config {
	var out []*istioconfig.Config
	for _, k := range istioconfig.Kinds() {
		out = append(out, m.List(k, "")...)
	}
	return out
}

// Create implements Store.
func (m *Memory) Create(cfg *istioconfig.Config) (*istioconfig.Config, error) {
	if err := istioconfig.Validate(cfg); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objects.Get(cfg.Key()); ok {
		return nil, fmt.Errorf("create %s: %w", cfg.Key(), ErrAlreadyExists)
	}
	return m.upsertLocked(cfg), nil
}

// Update implements Store. Writing an object Equal to the stored one changes nothing and
// emits no event.
func (m *Memory) Update(cfg *istioconfig.Config) (*istioconfig.Config, error) {
	if err := istioconfig.Validate(cfg); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.upsertLocked(cfg), nil
}

// Delete implements Store.
func (m *Memory) Delete(key istioconfig.Key) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objects.Get(key); !ok {
		return fmt.Errorf("delete %s: %w", key, ErrNotFound)
	}
	m.deleteLocked(key)
	return nil
}

// Apply validates every upsert, then applies the upserts and deletes under one lock, so
// readers see all of them or none, and their events are contiguous. Deletes of absent keys are
// ignored. It is how the file source applies one reload.
func (m *Memory) Apply(upserts []*istioconfig.Config, deletes []istioconfig.Key) error {
	for _, c := range upserts {
		if err := istioconfig.Validate(c); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range deletes {
		if _, ok := m.objects.Get(k); ok {
			m.deleteLocked(k)
		}
	}
	for _, c := range upserts {
		m.upsertLocked(c)
	}
	return nil
}

// upsertLocked stores a shallow copy of cfg (the spec and maps are shared, never copied)
// carrying a new ResourceVersion, like the Kubernetes API server does.
func (m *Memory) upsertLocked(cfg *istioconfig.Config) *istioconfig.Config {
	key := cfg.Key()
	old, _ := m.objects.Get(key)
	if old != nil && Equal(old, cfg) {
		return old
	}
	m.rv++
	c := *cfg
	c.ResourceVersion = strconv.FormatUint(m.rv, 10)
	switch {
	case old != nil:
		c.CreationTimestamp = old.CreationTimestamp
	case c.CreationTimestamp.IsZero():
		c.CreationTimestamp = m.now()
	}
	m.edit().Set(key, &c)
	if old == nil {
		m.emitLocked(Event{Kind: EventAdd, New: &c})
	} else {
		m.emitLocked(Event{Kind: EventUpdate, Old: old, New: &c})
	}
	return &c
}

// edit is the edit of objects that writes make until the next version is handed out (pop):
// the writes in between copy each shard they touch once, and no version handed out changes.
func (m *Memory) edit() *cow.Edit[istioconfig.Key, *istioconfig.Config] {
	if m.ed == nil {
		m.ed = m.objects.Edit()
	}
	return m.ed
}

func (m *Memory) deleteLocked(key istioconfig.Key) {
	old, _ := m.objects.Get(key)
	m.edit().Del(key)
	m.rv++
	m.emitLocked(Event{Kind: EventDelete, Old: old})
}

func (m *Memory) emitLocked(ev Event) {
	key := ev.Key()
	if prev := m.lastByKey[key]; prev != nil && (m.coalesceAbove < 0 || m.live >= m.coalesceAbove) {
		m.coalesced++
		if merged, keep := coalesce(*prev, ev); keep {
			*prev = merged
		} else {
			// add followed by delete: the consumer never saw the object, drop both.
			for i := len(m.backlog) - 1; i >= m.head; i-- {
				if m.backlog[i] == prev {
					m.backlog[i] = nil
					break
				}
			}
			m.live--
			delete(m.lastByKey, key)
		}
		return
	}
	e := &ev
	m.backlog = append(m.backlog, e)
	m.live++
	m.lastByKey[key] = e
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// coalesce merges b into a, two successive undelivered events of one key. keep is false when
// the pair cancels out.
func coalesce(a, b Event) (merged Event, keep bool) {
	switch {
	case a.Kind == EventAdd && b.Kind == EventUpdate:
		return Event{Kind: EventAdd, New: b.New}, true
	case a.Kind == EventAdd && b.Kind == EventDelete:
		return Event{}, false
	case a.Kind == EventUpdate && b.Kind == EventUpdate:
		return Event{Kind: EventUpdate, Old: a.Old, New: b.New}, true
	case a.Kind == EventUpdate && b.Kind == EventDelete:
		return Event{Kind: EventDelete, Old: a.Old}, true
	case a.Kind == EventDelete && b.Kind == EventAdd:
		return Event{Kind: EventUpdate, Old: a.Old, New: b.New}, true
	}
	// Impossible sequences (add+add, delete+delete, …) keep the newest event.
	return b, true
}
