package debounce

import (
	"errors"
	"fmt"
	"time"

	"github.com/xdslab/xdslab/controlplane/model"
)

// SimEvent is one change event in virtual time.
type SimEvent struct {
	// At is the event's time since the start of the run.
	At time.Duration
	// EndpointOnly marks an endpoint-only change (an EDS push); otherwise the event asks for a
	// full push. It matters only with DebounceEDS false.
	EndpointOnly bool
}

// SimPush is one predicted push cycle.
type SimPush struct {
	// At is the push's start since the start of the run.
	At time.Duration
	// Stats describes the push; Stats.Start is the virtual epoch plus At, Stats.Duration the
	// fixed push duration.
	Stats Stats
}

// simEpoch anchors virtual time; any non-zero time works, the zero time means "no deadline".
var simEpoch = time.Unix(0, 0).UTC()

// Simulate replays events (sorted by At) through a Core in virtual time, each push taking
// pushDuration, and returns the push cycles it would start, in order. It uses the same Core
// as the Debouncer, so its prediction is what the runner does with an exact timer.
//
// Inputs that happen at the same instant are taken in this order: a push finishing, then the
// timer, then events. So an event exactly MinQuiet after the previous one arrives after that
// batch was pushed, and starts the next.
func Simulate(opts Options, events []SimEvent, pushDuration time.Duration) ([]SimPush, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if pushDuration < 0 {
		return nil, fmt.Errorf("simulate debounce: push duration is %v: it must be zero or positive", pushDuration)
	}
	for i := 1; i < len(events); i++ {
		if events[i].At < events[i-1].At {
			return nil, fmt.Errorf("simulate debounce: event %d at %v comes before event %d at %v: sort events by time", i, events[i].At, i-1, events[i-1].At)
		}
	}
	if len(events) > 0 && events[0].At < 0 {
		return nil, errors.New("simulate debounce: event 0 has a negative time: times count from the start of the run")
	}

	core := NewCore(opts)
	// The Core never modifies the requests it is given, so two shared ones serve every event.
	fullReq, edsReq := simRequest(SimEvent{}), simRequest(SimEvent{EndpointOnly: true})
	var (
		pushes   []SimPush
		deadline time.Time // zero: no timer armed
		finish   time.Time // valid while core.Pushing()
	)
	apply := func(act Action) {
		if act.Push != nil {
			st := act.Stats
			st.Duration = pushDuration
			pushes = append(pushes, SimPush{At: st.Start.Sub(simEpoch), Stats: st})
			finish = st.Start.Add(pushDuration)
		}
		deadline = act.Deadline
	}
	for i := 0; ; {
		// The earliest pending input; ties resolve finish, timer, event.
		var next time.Time
		kind := 0 // 1 finish, 2 timer, 3 event
		if core.Pushing() {
			next, kind = finish, 1
		}
		if !deadline.IsZero() && (kind == 0 || deadline.Before(next)) {
			next, kind = deadline, 2
		}
		if i < len(events) {
			if at := simEpoch.Add(events[i].At); kind == 0 || at.Before(next) {
				next, kind = at, 3
			}
		}
		switch kind {
		case 0:
			return pushes, nil
		case 1:
			apply(core.PushDone(next))
		case 2:
			apply(core.Tick(next))
		case 3:
			req := fullReq
			if events[i].EndpointOnly {
				req = edsReq
			}
			apply(core.Event(req, next))
			i++
		}
	}
}

// simRequest is the request a simulated event stands for: one config or endpoint change.
func simRequest(ev SimEvent) *model.PushRequest {
	reason := model.ReasonConfigUpdate
	if ev.EndpointOnly {
		reason = model.ReasonEndpointUpdate
	}
	return &model.PushRequest{Full: !ev.EndpointOnly, Reasons: map[model.TriggerReason]int{reason: 1}}
}
