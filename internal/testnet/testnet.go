// Package testnet holds network helpers for tests.
package testnet

import (
	"net"
	"testing"
)

// FreeAddr returns a loopback address ("127.0.0.1:port") whose port was
// free a moment ago, for a server that a test starts in another process
// or that takes an address rather than a listener. Another process may
// take the port in between: a test that can pass a listener should.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("testnet: listen on a free port: %v", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		tb.Fatalf("testnet: close the listener: %v", err)
	}
	return addr
}
