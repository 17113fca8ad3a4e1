package sqlstore_test

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/sqlstore"
)

// commitCutter is a TCP proxy to PostgreSQL that, once armed, lets the
// first client message containing its pattern ("commit") reach the server, swallows
// the server's answer and closes the client's connection: the server ran
// the statement (and committed), the client reads io.EOF, as it does when
// the server process dies after the commit. (From a review of the folded
// BEGIN and COMMIT, as its tests.)
type commitCutter struct {
	ln     net.Listener
	target string
	armed  atomic.Bool
	cut    atomic.Int32
	// pattern, when set, replaces "commit"; with noForward the message
	// is not forwarded at all and the client connection closed (a
	// connection the server closed while it was idle in the pool).
	pattern   string
	noForward bool
	// skip is the number of matching messages let through first.
	skip atomic.Int32
}

func newCommitCutter(t *testing.T, target string) *commitCutter {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &commitCutter{ln: ln, target: target}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *commitCutter) serve(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = client.Close()
		return
	}
	var kill atomic.Bool
	go func() { // server -> client
		buf := make([]byte, 64<<10)
		for {
			n, err := server.Read(buf)
			if n > 0 {
				if kill.Load() {
					_ = client.Close()
					_ = server.Close()
					return
				}
				if _, werr := client.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				_ = client.Close()
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			pat := "commit"
			if p.pattern != "" {
				pat = p.pattern
			}
			if bytes.Contains(buf[:n], []byte(pat)) && p.armed.Load() && p.skip.Add(-1) < 0 && p.armed.CompareAndSwap(true, false) {
				kill.Store(true)
				p.cut.Add(1)
				if p.noForward {
					_ = client.Close()
					_ = server.Close()
					return
				}
			}
			if _, werr := server.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				_ = server.Close()
			}
			return
		}
	}
}

// cutStore opens a migrated PostgreSQL store through a commitCutter of
// pattern, which forwards the message it cuts when forward is set.
func cutStore(t *testing.T, pattern string, forward bool) (*sqlstore.Store, *commitCutter) {
	t.Helper()
	e := postgresOnly(t)
	u, err := url.Parse(e.DSN(t))
	require.NoError(t, err)
	p := newCommitCutter(t, u.Host)
	p.pattern, p.noForward = pattern, !forward
	u.Host = p.ln.Addr().String()
	s, err := sqlstore.Open(t.Context(), u.String(), &sqlstore.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.Migrate(t.Context()))
	return s, p
}

// TestCombinedCommitAnswerLost: when the server commits the combined
// transaction but its answer is lost (io.EOF), the outcome is unknown: every caller gets the error, and no
// change is made again (each was, once).
func TestCombinedCommitAnswerLost(t *testing.T) {
	ctx := t.Context()
	s, p := cutStore(t, "commit", true)

	f := newCombineFixture(t, s, 3)
	r := f.reactors
	f.settle()
	rec0, release, entered := blocking()
	c0 := f.start(ctx, add("a", r[0], func(c driver.Change) []messaging.Event {
		rec0(c)
		return nil // no events: c0's transaction ends with a plain COMMIT
	}))
	<-entered
	c1 := f.start(ctx, add("b", r[1], record))
	c2 := f.start(ctx, add("c", r[2], record))
	p.skip.Store(1)     // c0's own COMMIT goes through
	p.armed.Store(true) // the combined transaction of c1 and c2 loses its COMMIT's answer
	close(release)
	require.NoError(t, wait(t, c0).err)
	o1, o2 := wait(t, c1), wait(t, c2)
	require.EqualValues(t, 1, p.cut.Load(), "the COMMIT was cut")
	assert.Error(t, o1.err, "the outcome is unknown")
	assert.Error(t, o2.err, "the outcome is unknown")

	got, err := s.Driver().ReadEvents(ctx, driver.EventQuery{Scope: driver.Scope{All: true}, Limit: 100})
	require.NoError(t, err)
	assert.Len(t, got, 2, "one event per change (c1, c2): the committed transaction is not made again")
}

// TestCombinedDeadConnection: a connection that the server
// (idle_session_timeout) or a proxy closed while idle in the pool fails
// the transaction's BEGIN: nothing began, and the transaction runs again
// on another connection.
func TestCombinedDeadConnection(t *testing.T) {
	ctx := t.Context()
	s, p := cutStore(t, "begin", false)

	f := newCombineFixture(t, s, 4)
	r := f.reactors
	c0, release := f.hold(ctx, add("a", r[0], nil))
	var cs []<-chan outcome
	for i := 1; i < 4; i++ {
		cs = append(cs, f.start(ctx, add("b", r[i], record)))
	}
	p.armed.Store(true)
	close(release)
	require.NoError(t, wait(t, c0).err)
	for i, c := range cs {
		assert.NoError(t, wait(t, c).err, "change %d", i+1)
	}
	require.EqualValues(t, 1, p.cut.Load())
	got, err := s.Driver().GetMessage(ctx, f.msg.ID)
	require.NoError(t, err)
	assert.Equal(t, map[string][]string{"a": {"r0"}, "b": {"r1", "r2", "r3"}}, reactors(got))
}
