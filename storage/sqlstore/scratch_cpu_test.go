package sqlstore_test

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/sqlstore"
)

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestScratchCPU(t *testing.T) {
	if os.Getenv("SCRATCH") == "" {
		t.Skip()
	}
	f := newReadFixture(t, 1000)
	ctx := t.Context()
	first := f.messages[0].ID
	last := f.messages[len(f.messages)-1].ID
	page := driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 20}}
	ops := map[string]func() error{
		"GetMessageFull": func() error { _, err := f.s.Driver().GetMessage(ctx, first); return err },
		"GetContact":     func() error { _, err := f.s.Driver().GetContact(ctx, f.contact.ID); return err },
		"ListMessages":   func() error { _, _, err := f.s.Driver().ListMessages(ctx, page); return err },
		"React": func() error {
			if _, err := f.s.Driver().UpdateMessage(ctx, last, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: "bob", Add: []string{"y"}}}); err != nil {
				return err
			}
			_, err := f.s.Driver().UpdateMessage(ctx, last, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: "bob", Remove: []string{"y"}}})
			return err
		},
	}
	variants := []struct {
		name   string
		reads  string
		writes bool
	}{{"rewrite", "rewrite", true}, {"plain", "plain", true}, {"bun", "bun", false}}
	n := 2000
	rounds := 4
	if os.Getenv("SCRATCH") == "one" {
		variants, rounds = variants[:1], 1
	}
	for round := range rounds {
		vs := variants
		if round%2 == 1 && len(variants) == 3 {
			vs = []struct {
				name   string
				reads  string
				writes bool
			}{variants[2], variants[1], variants[0]}
		}
		for _, v := range vs {
			sqlstore.ScratchVariant(f.s, v.reads, v.writes)
			for _, op := range []string{"GetMessageFull", "GetContact", "ListMessages", "React"} {
				for range 50 {
					_ = ops[op]()
				}
				c0, w0 := cpuNow(), time.Now()
				for range n {
					if err := ops[op](); err != nil {
						t.Fatal(err)
					}
				}
				c1, w1 := cpuNow(), time.Now()
				t.Logf("round %d %-8s %-15s cpu %6.1f µs/op wall %6.1f µs/op", round, v.name, op, float64(c1-c0)/float64(n)/1e3, float64(w1.Sub(w0))/float64(n)/1e3)
			}
		}
	}
}
