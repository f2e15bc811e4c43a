package config

import (
	"errors"
	"fmt"
	"maps"

	"github.com/xdslab/xdslab/internal/cow"
	"github.com/xdslab/xdslab/istioconfig"
	"google.golang.org/protobuf/proto"
)

// Store holds Istio config objects by key. Implementations are safe for concurrent use.
// Returned configs are shared and immutable: never modify one.
type Store interface {
	// Get returns the object with the key.
	Get(key istioconfig.Key) (*istioconfig.Config, bool)
	// List returns the objects of a kind in a namespace ("" = every namespace), sorted by
	// namespace then name.
	List(kind istioconfig.Kind, namespace string) []*istioconfig.Config
	// Create stores a new object; ErrAlreadyExists if the key is taken.
	Create(cfg *istioconfig.Config) (*istioconfig.Config, error)
	// Update stores the object whether or not it exists (an upsert).
	Update(cfg *istioconfig.Config) (*istioconfig.Config, error)
	// Delete removes the object; ErrNotFound if absent.
	Delete(key istioconfig.Key) error
}

// Errors returned by a Store, to be tested with errors.Is.
var (
	ErrNotFound      = errors.New("config not found")
	ErrAlreadyExists = errors.New("config already exists")
)

// EventKind says what happened to an object.
type EventKind int

// Event kinds.
const (
	EventAdd EventKind = iota + 1
	EventUpdate
	EventDelete
)

func (k EventKind) String() string {
	switch k {
	case EventAdd:
		return "add"
	case EventUpdate:
		return "update"
	case EventDelete:
		return "delete"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is one change to a store. Add has only New, Delete only Old, Update both. Old and New
// are the stored (immutable) values.
type Event struct {
	Kind     EventKind
	Old, New *istioconfig.Config
	// State is the store's objects when the event was delivered (Memory sets it): this change
	// and every earlier one, perhaps some later ones whose events are still to come. The
	// registry aggregate serves its config objects from it, so the store's objects are the
	// only copy outside the snapshots.
	State *Version
}

// Version is one immutable state of a Memory store's objects.
type Version struct {
	m cow.Map[istioconfig.Key, *istioconfig.Config]
}

// Config returns the object with the key, or nil.
func (v *Version) Config(key istioconfig.Key) *istioconfig.Config {
	if v == nil {
		return nil
	}
	c, _ := v.m.Get(key)
	return c
}

// Configs returns every object, in no order.
func (v *Version) Configs() []*istioconfig.Config {
	if v == nil {
		return nil
	}
	return v.m.Values()
}

// Key is the key of the changed object.
func (e Event) Key() istioconfig.Key {
	if e.New != nil {
		return e.New.Key()
	}
	if e.Old != nil {
		return e.Old.Key()
	}
	return istioconfig.Key{}
}

func (e Event) String() string { return e.Kind.String() + " " + e.Key().String() }

// Equal reports whether two configs have the same content: metadata apart from the
// store-assigned ResourceVersion and CreationTimestamp, and an equal spec. A write of an equal
// object is a no-op that emits no event.
func Equal(a, b *istioconfig.Config) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Kind == b.Kind && a.Name == b.Name && a.Namespace == b.Namespace &&
		a.Source == b.Source && maps.Equal(a.Labels, b.Labels) &&
		maps.Equal(a.Annotations, b.Annotations) && proto.Equal(a.Spec, b.Spec)
}
