// Package controlplane assembles the xDS control plane from its parts (see DESIGN.md, "Inside
// the control plane"):
//
//	config dir ─▶ config.FileSource ─▶ config.Memory ─events─┐
//	lab's in-process sink ───────────▶ config.Memory         ├▶ registry.Aggregate
//	tests ─────▶ registry.Memory ────────────────────────────┘
//	    ─Change (keys, Full, View)─▶ debounce.Debouncer ─PushRequest─▶ model.BuildSnapshot ─▶ the ADS server (and Options.Pusher)
//
// The aggregate decides what changed, once per write: its Change names the keys, says whether
// the change is Full, and carries the immutable View of the state right after it. The
// debouncer merges the Changes' requests (its EDS bypass reads Full) and the snapshot builder
// applies the merged keys from the newest View. A file renamed into the config directory is
// read at once, so the debouncer's quiet window is the only wait on the directory path.
//
// Server owns one of each, wired by New from an Options struct (DefaultOptions, Validate), and
// serves /metrics, /debug/config, /debug/snapshot and /debug/syncz on Options.MetricsAddr. Every
// snapshot it builds is kept (Snapshot) and handed to the Pusher with the ChangeReport that says
// whether the push is full or endpoint-only. The metrics are the ones in package metrics, registered on
// Options.Registerer.
//
// Package controlplanetest starts a Server on 127.0.0.1:0 for tests.
package controlplane
