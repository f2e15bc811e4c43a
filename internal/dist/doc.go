// Package dist turns a small declarative distribution spec (as written in scenario files) into a
// seeded sampler backed by gonum's stat/distuv. The simulator draws endpoint counts and churn
// sizes from it; the fake Envoy fleet draws ACK delays from it.
package dist
