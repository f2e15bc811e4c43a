package scenarios

// MaxScheduledEvents is maxScheduledEvents, for the external tests.
const MaxScheduledEvents = maxScheduledEvents

// MaxEndpoints is maxEndpoints, for the external tests.
const MaxEndpoints = maxEndpoints
