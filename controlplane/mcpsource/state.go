package mcpsource

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/controlplane/config/validate"
	"github.com/xdslab/xdslab/internal/mcp"
	"github.com/xdslab/xdslab/istioconfig"
)

// held is one object the source wrote to the store.
type held struct {
	version string
	cfg     *istioconfig.Config
}

// State is what a source holds, per kind and namespace/name: the pure core of the client.
type State struct {
	// Source stamps every written config's Source field.
	Source string
	objs   map[istioconfig.Kind]map[string]held
}

// NewState returns an empty state whose configs carry source as their Source.
func NewState(source string) *State {
	return &State{Source: source, objs: map[istioconfig.Kind]map[string]held{}}
}

// Len is the number of objects held.
func (s *State) Len() int {
	n := 0
	for _, m := range s.objs {
		n += len(m)
	}
	return n
}

// Result is what one response changes.
type Result struct {
	Upserts []*istioconfig.Config
	Deletes []istioconfig.Key
	// Rejected lists the objects (and envelope problems) that were not applied, each naming the
	// type, the object and the rule; a non-empty list means the response is NACKed.
	Rejected []error
	// Ignored counts objects of a collection xdslab does not use.
	Ignored int
	// Stored says whether the type maps to a kind the store holds.
	Stored bool
	kind   istioconfig.Kind
	next   map[string]held
}

// Response computes what a response of typeURL changes, without changing the state: valid
// objects whose version (or, without versions, content) changed are upserts, objects the state
// holds that the response lacks are deletes. An invalid object is rejected and keeps its held
// version. Commit makes the result the state once the store accepted it.
func (s *State) Response(typeURL string, resources []*anypb.Any) Result {
	col, ok := mcp.Lookup(typeURL)
	if !ok {
		return Result{Rejected: []error{&mcp.Error{TypeURL: typeURL, Name: fmt.Sprintf("(%d resources)", len(resources)),
			Rule: "unknown type URL: not a config collection this client asked for; nothing applied"}}}
	}
	if col.Stored == "" {
		return Result{Ignored: len(resources)}
	}
	r := Result{Stored: true, kind: col.Stored, next: map[string]held{}}
	old := s.objs[col.Stored]
	copies := map[string]int{}         // namespace/name → copies in the response, valid or not
	valid := map[string]*mcp.Decoded{} // namespace/name → its valid copy
	kept := map[string]bool{}          // unchanged versions: body neither decoded nor validated again
	for i, a := range resources {
		if name, v, ok := mcp.Peek(a); ok && v != "" {
			if h, had := old[name]; had && h.version == v {
				copies[name]++
				kept[name] = true
				continue
			}
		}
		d, err := mcp.Decode(typeURL, i, a)
		if err == nil {
			if _, err = validate.Spec(d.Config); err != nil {
				err = &mcp.Error{TypeURL: typeURL, Name: d.Config.Namespace + "/" + d.Config.Name, Rule: err.Error()}
			}
		}
		if err != nil {
			r.Rejected = append(r.Rejected, err)
			var me *mcp.Error
			if errors.As(err, &me) && me.Name != "" && me.Name[0] != '#' && me.Name[0] != '"' {
				copies[me.Name]++ // its held version is kept, not deleted
			}
			continue
		}
		name := d.Config.Namespace + "/" + d.Config.Name
		copies[name]++
		valid[name] = &d
	}
	for _, name := range slices.Sorted(maps.Keys(copies)) {
		n, d := copies[name], valid[name]
		if n > 1 {
			r.Rejected = append(r.Rejected, &mcp.Error{TypeURL: typeURL, Name: name,
				Rule: fmt.Sprintf("name appears %d times in the response; none of its copies applied", n)})
		}
		h, had := old[name]
		if n == 1 && kept[name] {
			r.next[name] = h
			continue
		}
		if n > 1 || d == nil { // rejected: the last good version stays
			if had {
				r.next[name] = h
			}
			continue
		}
		c := withSource(d.Config, s.Source)
		if had && (d.Version != "" && d.Version == h.version || d.Version == "" && config.Equal(h.cfg, c)) {
			r.next[name] = h
			continue
		}
		r.Upserts = append(r.Upserts, c)
		r.next[name] = held{d.Version, c}
	}
	for name, h := range old {
		if _, ok := r.next[name]; !ok {
			r.Deletes = append(r.Deletes, h.cfg.Key())
		}
	}
	slices.SortFunc(r.Deletes, func(a, b istioconfig.Key) int { return strings.Compare(a.String(), b.String()) })
	return r
}

// Commit makes r the held state of its kind.
func (s *State) Commit(r Result) {
	if !r.Stored {
		return
	}
	s.objs[r.kind] = r.next
}

// Err joins the rejections of r (nil when there are none), for a NACK's error_detail.
func (r Result) Err() error { return errors.Join(r.Rejected...) }

func withSource(c *istioconfig.Config, src string) *istioconfig.Config {
	cp := *c
	cp.Source = src
	return &cp
}
