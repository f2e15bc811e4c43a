package scenarios

// MaxScheduledEvents is maxScheduledEvents, for the external tests.
const MaxScheduledEvents = maxScheduledEvents
