// Package suggest finds the valid name a misspelt one was meant to be, for "did you mean"
// in error messages (the scenario loader, the config decoder). It is a leaf: strings in,
// strings out.
package suggest
