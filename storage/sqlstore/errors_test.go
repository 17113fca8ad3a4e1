package sqlstore_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/sqlstore"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestUnreachableIsUnavailable(t *testing.T) {
	for _, dsn := range []string{
		"postgres://postgres@127.0.0.1:1/postgres?sslmode=disable",
		"mysql://root@127.0.0.1:1/test",
		"root@tcp(127.0.0.1:1)/test",
		filepath.Join(t.TempDir(), "no", "such", "dir", "parley.db"),
	} {
		t.Run(dsn, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			s, err := sqlstore.Open(ctx, dsn, quiet)
			if err == nil {
				_ = s.Close()
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, messaging.ErrUnavailable)
			assert.Equal(t, messaging.ErrUnavailable, messaging.KindOf(err))
			assert.NotEqual(t, messaging.ErrUnavailable.Error(), err.Error(), "the driver's error is the cause")
		})
	}
}

func TestDeadlineWhileConnectingIsUnavailable(t *testing.T) {
	// A server that accepts connections and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	addr := ln.Addr().String()
	for _, dsn := range []string{
		"postgres://postgres@" + addr + "/postgres?sslmode=disable",
		"mysql://root@" + addr + "/test",
	} {
		t.Run(dsn, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := sqlstore.Open(ctx, dsn, quiet)
			require.Error(t, err)
			assert.Less(t, time.Since(start), 5*time.Second, "the deadline holds")
			assert.ErrorIs(t, err, messaging.ErrUnavailable, "%v", err)
		})
	}
}

func TestBadDSNIsInvalid(t *testing.T) {
	_, err := sqlstore.Open(t.Context(), "postgres://%zz", quiet)
	require.Error(t, err)
	assert.ErrorIs(t, err, messaging.ErrInvalid)
}

// TestErrorsShowNoSQL: the message of every error the services return (the
// words a client may see) holds no SQL, whether the database answers "not
// found" or fails the query itself (its tables dropped underneath).
func TestErrorsShowNoSQL(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "parley.db"))
	require.NoError(t, s.Migrate(t.Context()))
	msgs := svctest.New(t, s, nil, nil)
	files := msgs.Files()
	caller := messaging.Contact{ID: "ctc_x"}
	calls := func() []error {
		return []error{
			func() error { _, err := msgs.Get(t.Context(), caller, "msg_01jz8k3x4y5z6a7b8c9d0e1f2g"); return err }(),
			func() error { _, err := files.Get(t.Context(), caller, "att_01jz8k3x4y5z6a7b8c9d0e1f2g"); return err }(),
			func() error {
				_, err := msgs.Messages(t.Context(), caller, "c", messaging.ListOptions{})
				return err
			}(),
			msgs.Touch(t.Context(), "ctc_x"),
		}
	}
	check := func(err error, kind messaging.ErrorKind) {
		t.Helper()
		var e *messaging.Error
		require.True(t, errors.As(err, &e), "%v", err)
		assert.Equal(t, kind, messaging.KindOf(err), "%v", err)
		for _, word := range []string{"SELECT", "UPDATE", "WHERE", "TABLE", "MESSAGES", "ATTACHMENTS", "CONTACTS"} {
			assert.NotContains(t, strings.ToUpper(e.Message), word)
		}
	}
	for i, err := range calls() {
		if i != 2 {
			check(err, messaging.ErrNotFound)
		}
	}
	for _, table := range []string{"reactions", "reaction_names", "attachments", "messages", "contacts", "conversation_members", "conversations"} {
		_, err := s.DB().ExecContext(t.Context(), "DROP TABLE "+table)
		require.NoError(t, err)
	}
	for _, err := range calls() {
		require.Error(t, err)
		check(err, 0)
		assert.Contains(t, err.Error(), "no such table", "the cause is kept for the log")
	}
}

func TestSQLiteSettings(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "parley.db"))
	ctx := t.Context()
	var mode string
	var sync, fk, busy int
	r := sqlstore.ReaderDB(s)
	require.NoError(t, r.NewRaw("PRAGMA journal_mode").Scan(ctx, &mode))
	require.NoError(t, r.NewRaw("PRAGMA synchronous").Scan(ctx, &sync))
	require.NoError(t, r.NewRaw("PRAGMA foreign_keys").Scan(ctx, &fk))
	require.NoError(t, s.DB().NewRaw("PRAGMA busy_timeout").Scan(ctx, &busy))
	assert.Equal(t, "wal", mode)
	assert.Equal(t, 1, sync, "synchronous=NORMAL")
	assert.Equal(t, 1, fk)
	assert.Equal(t, 10000, busy)
	assert.Equal(t, 1, s.DB().DB.Stats().MaxOpenConnections, "one writer connection")
	assert.Greater(t, r.DB.Stats().MaxOpenConnections, 1, "a pool of readers")
}

func TestSQLiteMemory(t *testing.T) {
	s := open(t, ":memory:")
	require.NoError(t, s.Migrate(t.Context()))
	c := messaging.Contact{ID: "ctc_1", Username: "alice", CreatedAt: time.Now().UTC()}
	require.NoError(t, s.Driver().PutContact(t.Context(), c))
	got, err := s.Driver().ContactByUsername(t.Context(), "alice")
	require.NoError(t, err, "reads see writes: one database")
	assert.Equal(t, "ctc_1", got.ID)
}
