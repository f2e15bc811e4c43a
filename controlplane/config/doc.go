// Package config holds the control plane's Istio config stores: an in-memory Store with a
// change stream, a strict decoder for the Istio YAML users `kubectl apply`, and a FileSource
// that keeps a store in step with a watched directory. Later sources (MCP, Kubernetes) write
// into the same Memory store type.
//
// # Store and events
//
// Memory implements Store (Get, List, Create, Update as an upsert, Delete) and Apply (a batch
// applied under one lock). Every write is validated (Validate): the spec must be the kind's
// istio.io/api networking/v1alpha3 type, the name a DNS-1123 subdomain and the namespace a
// DNS-1123 label. Configs are immutable: the store keeps a shallow copy of what it is given
// (the Spec and label maps are shared, never cloned) with a store-assigned ResourceVersion
// (increasing) and a CreationTimestamp (kept from the input, else the store's clock). Writing
// an object Equal to the stored one is a no-op without an event.
//
// One consumer reads the changes:
//
//	st := config.NewMemory(config.MemoryOptions{})
//	go st.Run(ctx)              // delivers events; closes st.Events() when ctx ends
//	for ev := range st.Events() { // ev.Kind is EventAdd, EventUpdate or EventDelete
//		apply(ev.Old, ev.New)
//	}
//
// Buffering policy: writers never block. Events wait in an in-memory backlog, in write order,
// from the first write on (a consumer that starts late still sees every add). Up to
// MemoryOptions.CoalesceAbove undelivered events (default 4096) each write is its own event;
// beyond that a write to a key with an undelivered event is merged into it (the merged event
// still goes from what the consumer last saw to the current value, so nothing is lost and
// per-key order holds, and the backlog stays below CoalesceAbove plus the number of keys).
// Pending and Coalesced expose the backlog for metrics. Only Run's goroutine sends.
//
// # Decoding
//
// Decode reads multi-document YAML (or a stream of JSON objects) exactly as kubectl does:
// apiVersion networking.istio.io/v1, v1beta1 or v1alpha3 (all the same schema), kinds
// ServiceEntry, WorkloadEntry, VirtualService, DestinationRule, Sidecar and Gateway,
// metadata{name, namespace (default "default"), labels, annotations, resourceVersion,
// creationTimestamp} and spec, decoded with protojson after sigs.k8s.io/yaml turns the YAML
// into JSON. "apiVersion: v1, kind: List" documents contribute their items. Decoding is strict:
// an unknown field (top level, metadata or spec) is an error. Every error is a *DecodeError
// naming file and line (of the offending key where it can be found, else of the document
// start), the path (spec.ports[0].targetPort), and the fix ("did you mean …?"). A bad document
// contributes nothing; the good ones are still returned beside the joined errors.
//
// # File source
//
// FileSource watches FileOptions.Dir recursively (subdirectories too, except those starting
// with '.') for *.yaml, *.yml and *.json files; dot-files, '#…' and '…~' editor files are
// ignored. fsnotify events are debounced per file (default 20ms quiet, at most 10× that), and
// a periodic rescan (default every 1s, comparing size and modification time) catches anything
// fsnotify missed. One goroutine (Run) owns all state; Status can be read from any goroutine.
//
// Each reload diffs the objects of the changed files against what the source wrote before and
// applies the adds, updates and deletes to the store in one Apply, so an atomic writer's
// temp-file + rename yields only the updates of objects that changed, never a delete and re-add.
// The rules:
//   - A file that fails to read or parse keeps its previous objects; the error (with file and
//     line) is logged, counted in FileOptions.Errors, and kept as the file's LastError.
//   - Deleting a file deletes its objects.
//   - An object defined by two files belongs to the file that defined it first (at startup:
//     the first path in lexical order); the later file's copy is ignored, counted and reported
//     in its Status Conflicts. If the owner drops the object, the other file's copy takes over.
//   - A file that defines one object twice is rejected like a parse error.
//
// Synced is closed after the first scan has been written to the store, so a server can wait
// for it before building its first snapshot (from Memory.All), then apply events from there:
// the events of the initial load are still delivered, so treat an add of a known key as an
// upsert.
//
// # Metrics hooks
//
// FileOptions.Errors (any Inc(), e.g. a prometheus.Counter) counts rejected file loads for
// xdslab_cp_config_file_errors_total, with no file label; the per-file detail is in Status.
// Memory.Pending and Memory.Coalesced can back gauges of the event backlog.
package config
