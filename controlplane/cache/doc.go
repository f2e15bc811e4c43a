// Package cache holds marshalled xDS resources so that each resource is encoded at most once per
// snapshot and the same bytes are shared by every client that receives them.
//
// An entry is keyed by (type URL, class, name) and stamped with a generation: the snapshot
// generation its inputs come from. A lookup with the current generation is a hit; a lookup with a
// newer generation is a miss that replaces the entry (this is how an entry is invalidated: a
// ConfigKey change moves the generation of everything that depends on it); a lookup with an older
// generation than the stored one bypasses the cache (a connection still finishing an older push
// must not evict newer bytes). Concurrent Get misses of one key are collapsed: one caller builds, the
// others wait for its result.
//
// The class names the set of proxies that get identical bytes for that resource ("" when every
// proxy does, as for endpoints). Wildcard lists (all clusters, all listeners for a class) are
// stored under the empty name. Unlike Istio's XdsCache, lookups from new connections fill and
// hit the cache too, not only pushes.
//
// Reads are counted per type and result (hit, miss, bypass) through a Counter the caller passes
// in, so the metrics package owns the metric.
package cache
