package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/storage/sqlstore"
)

func TestOpenRejectsBadDSN(t *testing.T) {
	_, _, err := driver{}.Open("postgres://%zz", sqlstore.Options{})
	assert.Error(t, err)
}

func TestOpenPools(t *testing.T) {
	w, r, err := driver{}.Open("postgres://u@127.0.0.1:1/db?sslmode=disable", sqlstore.Options{MaxOpenConns: 3})
	require.NoError(t, err, "Open does not connect")
	t.Cleanup(func() { _ = w.Close() })
	assert.Nil(t, r, "reads go through the one pool")
	assert.Equal(t, 3, w.Stats().MaxOpenConnections)
}

func TestCode(t *testing.T) {
	assert.Equal(t, "", driver{}.Code(errors.New("other")))
}

// TestPoolerModeSendsNoCancelRequest cancels a statement under way, once
// in the default mode and once in the pooler-safe one, on connections
// through a proxy that counts the connections made to the server: a
// cancel request is a connection of its own. PgBouncer 1.18 may crash on
// one (see the package doc).
func TestPoolerModeSendsNoCancelRequest(t *testing.T) {
	dsn := os.Getenv("PARLEY_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("PARLEY_TEST_POSTGRES is not set: PostgreSQL not tested")
	}
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	for _, tc := range []struct {
		params string
		dials  int
	}{{"", 2}, {"default_query_exec_mode=exec", 1}} {
		t.Run("params="+tc.params, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			t.Cleanup(func() { ln.Close() })
			var dials atomic.Int32
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					dials.Add(1)
					go func() {
						defer c.Close()
						s, err := net.Dial("tcp", u.Host)
						if err != nil {
							return
						}
						defer s.Close()
						go io.Copy(s, c)
						io.Copy(c, s)
					}()
				}
			}()
			v := *u
			v.Host = ln.Addr().String()
			q := v.Query()
			if tc.params != "" {
				q.Set("default_query_exec_mode", "exec")
			}
			v.RawQuery = q.Encode()
			db, _, err := driver{}.Open(v.String(), sqlstore.Options{MaxOpenConns: 1})
			require.NoError(t, err)
			t.Cleanup(func() { db.Close() })
			require.NoError(t, db.Ping())
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			_, err = db.ExecContext(ctx, "SELECT pg_sleep(3)")
			require.Error(t, err, "the statement ends with its context")
			// The connection is closed; a cancel request, if any, is
			// sent meanwhile, on a goroutine of pgx. The next call dials
			// anew.
			require.NoError(t, db.Ping())
			want := int32(tc.dials + 1)
			assert.Eventually(t, func() bool { return dials.Load() >= want }, 5*time.Second, 10*time.Millisecond)
			assert.Equal(t, want, dials.Load(), "connections made: the first, %d for the cancel, the next", tc.dials-1)
		})
	}
}
