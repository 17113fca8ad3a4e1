package attachments

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUploadsForget: the watch of a caller's uploads holds what its open
// uploads need and no more: the stored uploads that an open one began
// before, and nothing once none is open.
func TestUploadsForget(t *testing.T) {
	var u uploads
	a := u.begin("alice", 100)
	b := u.begin("alice", 100)
	require.True(t, a.add(30))
	require.True(t, b.add(30))
	b.end(true) // stored while a is open: a counts it
	assert.Len(t, u.callers["alice"].stored, 1)

	c := u.begin("alice", 100) // c.used would hold b
	c.used = 30
	require.True(t, a.add(10), "a: 40 own + 30 of b = 70")
	assert.False(t, c.add(31), "c: 30 stored + 40 of a + 31 = 101")
	assert.Zero(t, c.n, "a refused upload's bytes count no more")
	require.True(t, a.add(30), "a: 70 own + 30 of b = 100")
	c.end(false)

	a.end(true)
	assert.Empty(t, u.callers, "no open upload: nothing kept")

	d := u.begin("bob", 10)
	e := u.begin("bob", 10)
	d.end(true)
	f := u.begin("bob", 10) // began after d was stored
	e.end(false)
	assert.Empty(t, u.callers["bob"].stored, "f's start saw d: d is forgotten")
	f.end(false)
	assert.Empty(t, u.callers)
}
