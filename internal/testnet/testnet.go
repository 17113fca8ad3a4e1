// Package testnet holds network helpers for tests.
package testnet

import (
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
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

// ClosedAddr returns a loopback address that refuses connections: the first
// privileged port nothing listens on. A port freed by a listener on port 0
// would not stay closed: the other test packages, running meanwhile, get
// their listeners from the same ephemeral range.
func ClosedAddr(tb testing.TB) string {
	tb.Helper()
	for port := 1; port < 1024; port++ {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			continue
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			return addr
		}
	}
	tb.Fatal("testnet: every privileged loopback port accepts or times out")
	return ""
}
