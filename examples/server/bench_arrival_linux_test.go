package main

import (
	"bytes"
	"encoding/binary"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// arrivals reads an event stream with the kernel's receive time of each
// read (SO_TIMESTAMPNS): when the server's bytes reached the client's
// socket, which the client's own scheduling does not delay. With 10,000
// streams read on the machine that serves them, a reader may run long
// after its bytes came; this time is the server's alone.
type arrivals struct {
	raw     syscall.RawConn
	pending []byte // what the last read left after its last newline
	buf     []byte
	oob     []byte
}

// newArrivals turns on the receive times of s's connection; the bytes s
// has buffered so far are passed over (the stream's head).
func newArrivals(b *testing.B, s *idleStream) *arrivals {
	raw, err := s.conn.(*net.TCPConn).SyscallConn()
	require.NoError(b, err)
	var serr error
	require.NoError(b, raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}))
	require.NoError(b, serr, "SO_TIMESTAMPNS")
	return &arrivals{raw: raw, buf: make([]byte, 4096), oob: make([]byte, 128)}
}

// lines calls f with each complete line read and the kernel's receive
// time of the read that completed it, until the connection fails.
func (a *arrivals) lines(f func(line []byte, at time.Time)) {
	for {
		var n, oobn int
		var rerr error
		err := a.raw.Read(func(fd uintptr) bool {
			n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), a.buf, a.oob, 0)
			return rerr != syscall.EAGAIN
		})
		if rerr == syscall.EINTR {
			continue
		}
		if err != nil || rerr != nil || n == 0 {
			return
		}
		at := time.Now()
		if msgs, err := syscall.ParseSocketControlMessage(a.oob[:oobn]); err == nil {
			for _, m := range msgs {
				if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SO_TIMESTAMPNS && len(m.Data) >= 16 {
					sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
					nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
					at = time.Unix(sec, nsec)
				}
			}
		}
		data := a.buf[:n]
		if len(a.pending) > 0 {
			data = append(a.pending, data...)
		}
		for {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				break
			}
			f(data[:i+1], at)
			data = data[i+1:]
		}
		a.pending = append(a.pending[:0], data...)
	}
}

// ownCPU returns the CPU time (user and system) this process has used.
func ownCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
