// Package debounce turns the stream of change events from the aggregate into push cycles.
//
// Every registry or config change becomes a *model.PushRequest. Pushing each one would rebuild
// the snapshot and resend configuration to every proxy per event, so the debouncer merges
// events into batches and starts one push per batch, on the trailing edge:
//
//   - a batch is pushed once no event has arrived for Options.MinQuiet (the batch went quiet),
//     or once Options.MaxDelay has passed since its first event, whichever comes first;
//   - only one push is in flight at a time: events that arrive while a push runs are merged
//     into the next batch, which starts as soon as the push finishes if its quiet or max-delay
//     condition is already met by then;
//   - with Options.DebounceEDS false, an endpoint-only request is pushed at once (as soon as no
//     push is in flight) unless a full request is pending, which it then rides along with.
//
// # Policies
//
// How long a batch waits is a Policy's decision (Options.Policy). The Core asks its Policy for
// the Window (quiet window, max delay) whenever it computes the pending batch's deadline, and
// tells it each push's Outcome (push duration, events carried, events queued behind it) when
// the push finishes; the window changes only then, so a collecting batch's deadline is stable
// between pushes and the Core stays a pure state machine.
//
//   - fixed (the default): MinQuiet and MaxDelay for every batch, today's debounce.
//   - adaptive: the quiet window is CostFactor × an exponentially weighted moving average of
//     push durations, clamped to [MinQuiet, Adaptive.MaxQuiet], and a batch is capped at
//     AdaptiveCapFactor (2) × that window after its first event (MaxDelay still bounds it).
//
// Why push cost: the quiet window is a bet that waiting merges enough further events to save
// a push. What a saved push is worth is what a push costs, so the window should scale with it:
// when a push takes 50 ms, waiting 4 × 50 ms to fold the next events in saves far more than it
// delays; when pushes take 1 ms, a 100 ms wait buys almost nothing and only adds latency. The
// measure is what the Debouncer already has (push start → finish, the snapshot build on the
// push goroutine); it says nothing of the fan-out to proxies that runs after the push returns,
// which slows later builds only through shared CPU. The moving average keeps one slow push
// (a GC pause) from widening the window for long, and cheap pushes pull it back to MinQuiet.
// The events rate alone is the wrong signal: a fast stream of cheap endpoint changes is what
// a short window serves well. The queue depth (Outcome.Pending) is reported but not used: a
// batch that collected behind a push has waited at least that push's duration already, so the
// cost signal covers it.
//
// Why the cap: a quiet window longer than the gaps between events never goes quiet, so every
// batch would run to MaxDelay (10 s by default) — a cliff, not a slope. A first version
// without the cap did exactly that on xdslab's quickstart (p99 push latency 5-10 s; see
// docs/tuning.md). Capping at twice the window keeps the latency proportional to the push
// cost while still bounding the push rate to about one per two windows under a steady stream.
//
// No per-class (EDS vs full) windows: with DebounceEDS false endpoint-only changes already
// bypass the window, and with it true an EDS change and a full change that arrive together
// are merged into one push anyway (the full push rebuilds endpoints too), so two windows would
// either push twice or wait for the longer one. One window, learned from the pushes that
// actually ran, keeps batches mergeable.
//
// The package has three layers:
//
//   - Core is the pure state machine: no goroutines, no clock reads. It is fed events, timer
//     fires and "push finished" notices, each with the current time, and answers with an
//     Action: a push to start (with its Stats) and the deadline at which it wants to be woken.
//   - Debouncer is the thin runner: one goroutine owns a Core, reads requests from a channel,
//     arms one timer from an injected Clock, runs pushes one at a time and reports Stats to an
//     observer (which the metrics package turns into pilot_debounce_time and
//     xdslab_cp_debounce_events_per_push without this package importing it).
//   - Simulate replays event times through a Core in virtual time, with a fixed push duration,
//     so the lab can predict push cycles for a grid of MinQuiet × MaxDelay (and policies)
//     without running anything. The adaptive policy learns from the simulated push duration:
//     with pushes of zero duration (xdslab tune's estimate) it stays at MinQuiet.
//
// Metrics: the Debouncer's Observe callback receives one Stats per push. The metrics package
// records pilot_debounce_time from Stats.Delay and xdslab_cp_debounce_events_per_push from
// Stats.Events; Stats.Trigger (quiet, max-delay, immediate) is a bounded label, and
// Stats.Blocked shows how long ready batches queued behind a slow push, and Stats.Quiet the
// window the policy applied (xdslab_cp_debounce_quiet_seconds).
//
// Compared with Istio's debounce (pilot/pkg/xds/discovery.go): the same trailing edge and
// single push in flight, but the max-delay deadline is armed exactly instead of being checked
// on quiet-timer ticks (Istio can overshoot MaxDelay by up to MinQuiet), and undebounced
// endpoint pushes also wait for the push in flight instead of running beside it.
package debounce
