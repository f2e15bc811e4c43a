// Package cow is a copy-on-write map split into shards by key hash: a value copy shares every
// shard, and an Edit copies a shard before its first write, so a version handed out never
// changes while later versions are built from it at the cost of the shards they touch. The
// config store publishes its objects as such versions, and the registry aggregate its views.
// A leaf.
package cow
