// Package syncbuf is a bytes buffer safe for concurrent writers and readers: what tests hand a
// logger or a progress writer that other goroutines write to while the test reads it. A leaf.
package syncbuf
