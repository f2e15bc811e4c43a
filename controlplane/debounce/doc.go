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
//     so the lab can predict push cycles for a grid of MinQuiet × MaxDelay without running
//     anything.
//
// Metrics: the Debouncer's Observe callback receives one Stats per push. The metrics package
// records pilot_debounce_time from Stats.Delay and xdslab_cp_debounce_events_per_push from
// Stats.Events; Stats.Trigger (quiet, max-delay, immediate) is a bounded label, and
// Stats.Blocked shows how long ready batches queued behind a slow push.
//
// Compared with Istio's debounce (pilot/pkg/xds/discovery.go): the same trailing edge and
// single push in flight, but the max-delay deadline is armed exactly instead of being checked
// on quiet-timer ticks (Istio can overshoot MaxDelay by up to MinQuiet), and undebounced
// endpoint pushes also wait for the push in flight instead of running beside it.
package debounce
