package fleet

import "sort"

// IncompleteGroup is how many clients of one group share one reason for having no full config,
// with a few of them named.
type IncompleteGroup struct {
	Group    string
	Reason   string
	Clients  int
	Examples []string // node ids (at most 3) and, per example, the resource concerned
}

// Incomplete lists why the fleet's clients that never reached a full config did not, one entry
// per group and reason, most clients first. Safe to call while the fleet runs.
func (f *Fleet) Incomplete() []IncompleteGroup {
	type key struct{ group, reason string }
	agg := map[key]*IncompleteGroup{}
	for _, fc := range f.clients {
		b, ok := fc.c.Blocked()
		if !ok {
			continue
		}
		k := key{fc.group, b.Reason}
		g := agg[k]
		if g == nil {
			g = &IncompleteGroup{Group: fc.group, Reason: b.Reason}
			agg[k] = g
		}
		g.Clients++
		if len(g.Examples) < 3 {
			ex := fc.c.NodeID()
			if b.Example != "" {
				ex += " (" + b.Example + ")"
			}
			g.Examples = append(g.Examples, ex)
		}
	}
	out := make([]IncompleteGroup, 0, len(agg))
	for _, g := range agg {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Clients != out[j].Clients {
			return out[i].Clients > out[j].Clients
		}
		if out[i].Group != out[j].Group {
			return out[i].Group < out[j].Group
		}
		return out[i].Reason < out[j].Reason
	})
	return out
}
