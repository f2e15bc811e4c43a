// Package h2tally counts the HTTP/2 frames one side of a connection sends, as the other side
// reads them: tests wrap a net.Conn with it to check what a transport puts on the wire (a PING
// it should not send, a WINDOW_UPDATE per message) without decoding anything else.
package h2tally
