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
// DNS-1123 label (Istio's semantic rules are checked on decode, not on every write: see
// Validation). Configs are immutable: the store keeps a shallow copy of what it is given
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
// ServiceEntry, WorkloadEntry, VirtualService, DestinationRule, Sidecar and Gateway, and
// PeerAuthentication, AuthorizationPolicy and RequestAuthentication under security.istio.io/v1 or v1beta1, metadata{name, namespace (default "default"), labels, annotations, resourceVersion,
// creationTimestamp} and spec, decoded with protojson after sigs.k8s.io/yaml turns the YAML
// into JSON. "apiVersion: v1, kind: List" documents contribute their items, with a warning:
// istiod's file source skips a List. Documents are separated by "---" lines; a "..." end
// marker ends its document as in istiod's file source, so what follows it up to the next
// "---" is not read (a warning names its first line), and a marker that ends no document is an
// error. Decoding is strict:
// an unknown field (top level, metadata or spec) is an error, and so is a key a mapping writes
// twice, or an object (kind, namespace, name) an input defines twice (the error names both
// lines). Anchors, aliases and merge keys (<<: *base) read as istiod's file source reads them
// (sigs.k8s.io/yaml): a key beside a merge key is not a duplicate; it overrides the merged one
// when written after it, and is overridden when written before it. Every error is a *DecodeError
// naming file and line (of the offending key where it can be found, else of the document
// start), the path (spec.ports[0].targetPort), and the fix ("did you mean …?"). A bad document
// contributes nothing; the good ones are still returned beside the joined errors.
//
// A document of another kind or apiVersion (a Kubernetes Service, a WasmPlugin,
// networking.istio.io/v2, a misspelt kind) is not an error: like istiod, which ignores kinds
// it does not watch, the decoder skips it and DecodeAll reports it as a Skipped (with a hint
// when it looks like a typo of a kind or apiVersion it reads).
//
// # Validation
//
// Every decoded object then passes Istio's semantic validation: the decoder runs the rules of
// package controlplane/config/validate (validate.Check) on the spec. A broken rule is a
// *DecodeError on the offending field's line, and the object's document contributes nothing;
// a finding istiod admits the object with (or a field xdslab accepts but does not generate) is
// a warning in Decoded.Warnings and the object is kept.
//
// References between objects are not checked on load, as istiod's webhook does not.
// validate.Analyze reports them, and CheckPaths runs decoding, the file rules below and
// validate.Analyze over files and directories for `xdslab validate`.
//
// # File source
//
// FileSource watches FileOptions.Dir recursively (subdirectories too, except those starting
// with '.') for *.yaml, *.yml and *.json files; dot-files, '#…' and '…~' editor files are
// ignored. A file renamed into place (fsnotify's Rename of the old name directly followed by the
// Create of the new one, non-empty) is complete and is read at once; a file written in place is read once
// it settled (below); a removal waits for the rest of its burst (Debounce, default 20ms quiet,
// at most 10× that) and is read with the whole tree. The control plane's debouncer is the only
// wait between a complete file and its push. A periodic rescan (default every 1s, comparing
// size and modification time) catches anything fsnotify missed. One goroutine (Run) owns all
// state; Status can be read from any goroutine.
//
// Faults it survives (docs/faults.md has the measurements):
//   - A file written in place (a write event, a create that does not end a rename, or a change
//     a rescan found) is read only once its size and modification time held still for
//     FileOptions.WriteSettle (default 100ms); a file renamed into place is read at once. A
//     file whose size changes while it is read is not parsed but read again once it settled,
//     and MaxFileBytes is checked on the stat before reading (at most MaxFileBytes+1 bytes
//     are ever read).
//   - A change that would delete more than DeleteGuard.Share (default 50%) of the objects,
//     counting the deletions applied within the last DeleteGuard.Settle, is held (warned and
//     counted in DeleteGuard.Held): nothing is read or applied for Settle (default 5s), then
//     the directory is re-read and what it holds is applied, so files moved out and back or an
//     rm -rf and restore change nothing. A file's removal triggers a full scan, so files moved
//     out together are one change. DeleteGuard.Off disables it.
//   - Atomic swaps are read as one generation: a Kubernetes ConfigMap's "..data" symlink swap
//     (any "..*" event) and the directory itself being replaced trigger one full scan.
//   - The directory's parent is watched too, so a directory removed and created again, or
//     another directory renamed into its place, is watched again at once (logged); so is a
//     subdirectory. A directory that cannot be read keeps the loaded config.
//   - An unreadable file (a symlink loop, no permission) keeps its objects and is logged and
//     counted once, until it (or the link) changes.
//
// Each reload diffs the objects of the changed files against what the source wrote before and
// applies the adds, updates and deletes to the store in one Apply, so an atomic writer's
// temp-file + rename yields only the updates of objects that changed, never a delete and re-add.
// The rules:
//   - A file that fails to read or parse, or holds an object that fails validation, keeps its
//     previous objects (none of its objects are applied, valid or not, so a file is always
//     seen whole); the error (with file and line) is logged, counted in FileOptions.Errors,
//     and kept as the file's LastError.
//   - A skipped document (another kind or apiVersion) is logged once and counted once in
//     FileOptions.Skipped, when a load of its file first shows it; warnings are logged once.
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
// FileOptions.Skipped counts skipped documents for xdslab_cp_config_objects_skipped_total.
// Memory.Pending and Memory.Coalesced can back gauges of the event backlog.
package config
