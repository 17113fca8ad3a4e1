package sqlstore

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/storage/storecopy"
)

// The reactions of a copy, in the shape of the tables now: reaction_names
// (seq, message_id, name; its counters reactors and head_seq are made
// anew from the reactors loaded) and reactions (seq, message_id, name,
// contact_id, created_at). Both keep their seq, so that names and
// reactors keep their order.

type (
	reactionNameDump struct {
		MessageID string `bun:"message_id"`
		Name      string `bun:"name"`
		Seq       int64  `bun:"seq"`
	}
	reactionDump struct {
		MessageID string    `bun:"message_id"`
		Name      string    `bun:"name"`
		Seq       int64     `bun:"seq"`
		ContactID string    `bun:"contact_id"`
		CreatedAt time.Time `bun:"created_at"`
	}
)

// reactionRows yields the reaction names or the reactions (k) in the
// order the messages show them.
func (p *snapshot) reactionRows(ctx context.Context, k storecopy.Kind, size int) iter.Seq2[*storecopy.Batch, error] {
	if k == storecopy.ReactionNames {
		return scanBatches(ctx, p, "SELECT message_id, name, seq FROM reaction_names ORDER BY message_id, seq", size,
			func(rs []reactionNameDump) *storecopy.Batch {
				b := &storecopy.Batch{Kind: k, ReactionNames: make([]storecopy.ReactionName, len(rs))}
				for i, r := range rs {
					b.ReactionNames[i] = storecopy.ReactionName{MessageID: r.MessageID, Name: r.Name, Seq: r.Seq}
				}
				return b
			})
	}
	return scanBatches(ctx, p, `SELECT r.message_id, r.name, r.seq, r.contact_id, r.created_at FROM reactions AS r
		JOIN reaction_names AS n ON n.message_id = r.message_id AND n.name = r.name ORDER BY r.message_id, n.seq, r.seq`, size,
		func(rs []reactionDump) *storecopy.Batch {
			b := &storecopy.Batch{Kind: k, Reactions: make([]storecopy.Reaction, len(rs))}
			for i, r := range rs {
				b.Reactions[i] = storecopy.Reaction{MessageID: r.MessageID, Name: r.Name, Seq: r.Seq, ContactID: r.ContactID, ReactedAt: utc(r.CreatedAt)}
			}
			return b
		})
}

// loadReactions stores the reaction names or reactions of b with their
// seq; on PostgreSQL, whose seq is an identity column, the identity then
// continues after the greatest.
func (s *store) loadReactions(ctx context.Context, ins *inserter, b *storecopy.Batch) error {
	overriding := s.sql.overriding
	table := "reaction_names"
	if b.Kind == storecopy.ReactionNames {
		ins.startWith("INSERT INTO reaction_names (seq, message_id, name) "+overriding+"VALUES ", "seq")
		for _, r := range b.ReactionNames {
			ins.add(r.Seq, r.MessageID, r.Name)
		}
	} else {
		table = "reactions"
		ins.startWith("INSERT INTO reactions (seq, message_id, name, contact_id, created_at) "+overriding+"VALUES ", "seq")
		for _, r := range b.Reactions {
			ins.add(r.Seq, r.MessageID, r.Name, r.ContactID, r.ReactedAt.UTC())
		}
	}
	if err := ins.flush(ctx); err != nil {
		return err
	}
	if b.Kind == storecopy.Reactions && len(b.Reactions) > 0 {
		// The counters of the names of the batch's messages, from their
		// reactors loaded so far (a message's reactors may span batches:
		// the last one counts them all).
		var msgs []string
		for _, r := range b.Reactions {
			if len(msgs) == 0 || msgs[len(msgs)-1] != r.MessageID {
				msgs = append(msgs, r.MessageID)
			}
		}
		if _, err := ins.tx.ExecContext(ctx, backfillReactorCounts+" WHERE message_id IN (?)", bun.List(msgs)); err != nil {
			return err
		}
		if _, err := ins.tx.ExecContext(ctx, "UPDATE reaction_names SET head_seq = "+headSQL("reaction_names.message_id", "reaction_names.name")+
			" WHERE message_id IN (?)", bun.List(msgs)); err != nil {
			return err
		}
	}
	if s.sql.resetSeq != "" {
		_, err := ins.tx.ExecContext(ctx, fmt.Sprintf(s.sql.resetSeq, table))
		return err
	}
	return nil
}
