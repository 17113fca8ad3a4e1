package sqlstore

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/storage/storecopy"
)

// loadReactions stores the reaction names or reactions of b with their
// seq, which keeps their order; a name's counters are made anew from the
// reactors loaded, and PostgreSQL's identity continues after the greatest.
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
