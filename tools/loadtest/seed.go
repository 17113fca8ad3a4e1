package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/sqlstore"
	_ "github.com/parleychat/parley/storage/sqlstore/mysql"    // -db mysql://…
	_ "github.com/parleychat/parley/storage/sqlstore/postgres" // -db postgres://…
	_ "github.com/parleychat/parley/storage/sqlstore/sqlite"   // -db a SQLite file
)

// seedChunk is the number of messages of one ImportMessages call (one
// transaction).
const seedChunk = 10000

// seed stores n messages from user (made if needed) in conv of the database
// dsn, through sqlstore's bulk load (driver.MessageImporter): the i-th message is "seed message
// i", created i microseconds after the first, the last a moment ago. It
// returns the time the inserts took.
func seed(ctx context.Context, dsn, conv, user string, n int, out io.Writer) (time.Duration, error) {
	store, err := sqlstore.Open(ctx, dsn, &sqlstore.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return 0, err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return 0, err
	}

	drv := store.Driver()
	imp := drv.(driver.MessageImporter) // sqlstore's bulk load
	now := time.Now().UTC().Truncate(time.Microsecond)
	base := now.Add(-time.Duration(n) * time.Microsecond)
	c, err := drv.ContactByUsername(ctx, user)
	if errors.Is(err, messaging.ErrNotFound) {
		// An id of before the messages', so that theirs keep their own times.
		c = messaging.Contact{ID: ids.NewAt(ids.Contact, base.Add(-time.Millisecond)), Username: user, CreatedAt: now}
		err = drv.PutContact(ctx, c)
	}
	if err != nil {
		return 0, fmt.Errorf("contact %q: %w", user, err)
	}

	// One goroutine makes the next chunk while the current one is stored.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	chunks := make(chan []messaging.Message, 2)
	go func() {
		defer close(chunks)
		for done := 0; done < n; {
			ms := make([]messaging.Message, min(seedChunk, n-done))
			for i := range ms {
				at := base.Add(time.Duration(done+i) * time.Microsecond)
				ms[i] = messaging.Message{
					ID:             ids.NewAt(ids.Message, at),
					ConversationID: conv,
					Contact:        messaging.Contact{ID: c.ID},
					Text:           "seed message " + strconv.Itoa(done+i),
					CreatedAt:      at,
				}
			}
			select {
			case chunks <- ms:
			case <-ctx.Done():
				return
			}
			done += len(ms)
		}
	}()

	start := time.Now()
	stored, next := 0, 100000
	for ms := range chunks {
		if err := imp.ImportMessages(ctx, ms); err != nil {
			return time.Since(start), err
		}
		stored += len(ms)
		if stored >= next || stored == n {
			fmt.Fprintf(out, "seed: %d/%d messages in %s\n", stored, n, time.Since(start).Round(time.Millisecond))
			next += 100000
		}
	}
	took := time.Since(start)
	fmt.Fprintf(out, "seed: %d messages from %s (%s) in conversation %s in %s (%.0f messages/s)\n",
		n, user, c.ID, conv, took.Round(time.Millisecond), float64(n)/took.Seconds())
	return took, ctx.Err()
}
