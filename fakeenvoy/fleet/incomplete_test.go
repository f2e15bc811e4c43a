package fleet

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// TestIncompleteNotConnected: clients that never connect say so, with the code their connects
// fail with, aggregated per group.
func TestIncompleteNotConnected(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // a closed port: connection refused
	f, err := New(Config{Target: addr, Groups: []Group{{Name: "g", Count: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	var got []IncompleteGroup
	for ctx.Err() == nil {
		got = f.Incomplete()
		if len(got) == 1 && got[0].Clients == 3 && strings.HasPrefix(got[0].Reason, "not connected") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(got) != 1 || got[0].Group != "g" || got[0].Clients != 3 || got[0].Reason != "not connected: its connects fail with Unavailable (see the connect failures)" || len(got[0].Examples) != 3 {
		t.Fatalf("incomplete: %+v", got)
	}
}
