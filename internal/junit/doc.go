// Package junit writes JUnit XML, the test-report format CI systems show: `xdslab run`'s
// junit.xml (one case per threshold) and `xdslab compare --format junit` (one case per gated
// metric) share it. A leaf: it knows nothing of what the cases judge.
package junit
