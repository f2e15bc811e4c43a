// Package units holds the value types of a scenario file that are written with a unit, and how
// they are written: Duration ("250ms", "1m30s"), Rate ("20/s", "30/m") and TimeDist (a
// distribution whose times may be written as durations), with the parsers the scenarios loader
// calls (each returns the fix to show with its error) and marshalling that prints them back in
// the form they load from, so a printed scenario reloads. It also names the parameters of a
// distribution mapping (DistKeys, IsTimeParam, DistParams) and renders one for summaries.
//
// In the flow, scenarios.Scenario's fields have these types; the runner reads them as
// time.Duration (Duration.D), events per second (Rate.PerSecond) and dist.Spec (TimeDist.Spec).
// The package is a leaf beside scenarios/threshold: it knows nothing of the scenario file's
// structure.
package units
