package testnet_test

import (
	"errors"
	"net"
	"syscall"
	"testing"

	"github.com/parleychat/parley/internal/testnet"
)

// TestFreeAddr: the address is on the loopback interface, and a server
// can listen on it.
func TestFreeAddr(t *testing.T) {
	addr := testnet.FreeAddr(t)
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "127.0.0.1" || port == "0" {
		t.Fatalf("FreeAddr = %q (%v), want 127.0.0.1 and a port", addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	ln.Close()
}

// TestClosedAddr: a dial to the address is refused.
func TestClosedAddr(t *testing.T) {
	addr := testnet.ClosedAddr(t)
	c, err := net.Dial("tcp", addr)
	if err == nil {
		c.Close()
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial %s: %v, want a refused connection", addr, err)
	}
}
