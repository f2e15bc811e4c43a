package run

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHostIsLocal(t *testing.T) {
	cases := map[string]bool{"127.0.0.1": true, "::1": true, "0.0.0.0": true, "localhost": true, "192.0.2.1": false}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() {
				cases[n.IP.String()] = true // one of this machine's own addresses
				break
			}
		}
	}
	for host, want := range cases {
		got, err := hostIsLocal(context.Background(), host)
		require.NoErrorf(t, err, "%s", host)
		require.Equalf(t, want, got, "%s", host)
	}
}

func TestGroupShortfall(t *testing.T) {
	require.Equal(t, " (a 1 of 3, b 2 of 2)", groupShortfall(map[string]int{"a": 3, "b": 2}, map[string]uint64{"a": 2}))
	require.Empty(t, groupShortfall(map[string]int{"a": 3}, map[string]uint64{"a": 3}))
}
