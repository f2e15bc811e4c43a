// Package model holds the control plane's data model: services and endpoints from registries,
// Istio config objects, the keys that name them, push requests, proxies parsed from Envoy nodes,
// and the immutable Snapshot a push reads. Everything below the model (registries, config
// stores, the debouncer, generators) speaks these types; the model imports none of them.
package model
