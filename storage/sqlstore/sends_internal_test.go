package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/parleychat/parley/messaging"
)

// Panics of a statement of sends. The Store has no database: its
// statement panics (a nil *bun.DB), as a driver, a query hook or a bug
// could.

func pendingFor(ctx context.Context, i int) *pendingSend {
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	return &pendingSend{ctx: ctx, out: make(chan error, 1),
		m: messaging.Message{ID: fmt.Sprintf("msg_%d", i), ConversationID: "c", Contact: messaging.Contact{ID: "ct"}, Text: "t", CreatedAt: at}}
}

// TestSendAllCaughtPanicAfterLeft: a statement that panics after a
// caller left gives the others errCombinedPanic, and the panic goes no
// further (on the goroutine of sendNext it would end the program).
func TestSendAllCaughtPanicAfterLeft(t *testing.T) {
	s := &store{opts: Options{Logger: slog.New(slog.DiscardHandler)}}
	left, leave := context.WithCancel(t.Context())
	leave()
	batch := []*pendingSend{pendingFor(left, 0), pendingFor(t.Context(), 1), pendingFor(t.Context(), 2)}
	var escaped any
	func() {
		defer func() { escaped = recover() }()
		caught(s, batch, s.sendAll)
	}()
	if escaped != nil {
		t.Fatalf("a panic escaped caught (it would end the program): %v", escaped)
	}
	for _, p := range batch[1:] {
		if err := <-p.out; !errors.Is(err, errCombinedPanic) {
			t.Errorf("got %v, want errCombinedPanic", err)
		}
	}
}

// TestSendAloneInBatchPanic: a send of the queue made alone (a batch of
// one, or a statement that failed) runs on a goroutine of its own; its
// panic is handed to its caller, and does not end the program.
func TestSendAloneInBatchPanic(t *testing.T) {
	if os.Getenv("PARLEY_SEND_PANIC_CHILD") == "1" {
		s := &store{opts: Options{Logger: slog.New(slog.DiscardHandler)}}
		p := pendingFor(context.Background(), 0)
		caught(s, []*pendingSend{p}, s.sendAll)
		var pn *panicked
		if errors.As(<-p.out, &pn) {
			fmt.Println("answered: panicked")
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSendAloneInBatchPanic$", "-test.count=1")
	cmd.Env = append(os.Environ(), "PARLEY_SEND_PANIC_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		head := out
		if len(head) > 600 {
			head = head[:600]
		}
		t.Fatalf("the process ended (%v):\n%s", err, head)
	}
	if !strings.Contains(string(out), "answered: panicked") {
		t.Fatalf("the caller was not handed the panic:\n%s", out)
	}
}

// TestSendPanicAfterContextEnds: a send of the queue, made alone
// (a batch of one), panics; its caller's context ends meanwhile. The
// panic is the caller's either way (send re-panics a *panicked it
// receives on p.out); the ctx.Done branch of send reads p.out too, and
// must not return the *panicked as an error. The Store has no database:
// its statement panics (as in TestSendAllCaughtPanicAfterLeft).
func TestSendPanicAfterContextEnds(t *testing.T) {
	for i := range 20 {
		s := &store{opts: Options{Logger: slog.New(slog.DiscardHandler)}}
		sc := &s.sending
		since := time.Now().Add(time.Hour)
		sc.slots = []*time.Time{&since, &since} // held, never stalled
		ctx, cancel := context.WithCancel(context.Background())
		p := &pendingSend{m: pendingFor(ctx, i).m}
		res := make(chan any, 1)
		go func() {
			defer func() {
				if v := recover(); v != nil {
					res <- v
				}
			}()
			res <- s.send(ctx, p)
		}()
		for {
			sc.mu.Lock()
			n := len(sc.queue)
			sc.mu.Unlock()
			if n == 1 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		// The caller's stall timer fires (stallAfter) while the queue is
		// held: it waits for sc.mu, out of its select.
		sc.mu.Lock()
		batch := sc.queue
		sc.queue = nil // taken, as takeSends takes it
		time.Sleep(stallAfter + 50*time.Millisecond)
		caught(s, batch, s.sendAll) // a batch of one: made alone, panics, p.out <- *panicked
		cancel()
		sc.mu.Unlock()
		select {
		case v := <-res:
			if err, ok := v.(error); ok {
				if _, pn := err.(*panicked); pn {
					t.Fatalf("round %d: the caller got the panic as an error, %T %q: it would have panicked alone", i, err, err)
				}
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: the caller got no answer", i)
		}
	}
}
