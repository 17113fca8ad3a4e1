package sqlstore_test

import (
	"io/fs"
	"net"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/parleychat/parley/storage/sqlstore"
)

// TestLocalErrorsAreNotUnavailable: a system call error of the local
// machine (a full disk, a forbidden or broken file) is not an unreachable
// database, though syscall.Errno is a net.Error; one of a connection is.
func TestLocalErrorsAreNotUnavailable(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EACCES, syscall.EIO} {
		assert.False(t, sqlstore.Unavailable(&fs.PathError{Op: "write", Path: "/var/lib/parley.db", Err: errno}), "%v", errno)
		assert.False(t, sqlstore.Unavailable(errno), "%v", errno)
		assert.True(t, sqlstore.Unavailable(&net.OpError{Op: "read", Net: "tcp", Err: errno}), "%v over a connection", errno)
	}
}
