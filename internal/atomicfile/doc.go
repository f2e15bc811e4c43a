// Package atomicfile writes a file so that readers see the old content or the new, never a
// part: through a temporary file in the same directory, renamed into place. The lab's outputs
// (summary.json, reports, tune results) and the simulator's directory sink use it. A leaf.
package atomicfile
