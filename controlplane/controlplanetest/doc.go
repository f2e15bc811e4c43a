// Package controlplanetest starts a control plane for tests, in the manner of net/http/httptest:
// NewServer listens on 127.0.0.1:0, and stops the server with t.Cleanup.
package controlplanetest
