package events_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/storetest"
)

// blindPolicy lets every contact see everything but those in blind.
type blindPolicy struct{ blind sync.Map }

func (p *blindPolicy) CanView(_ context.Context, contactID, _ string) (bool, error) {
	_, hidden := p.blind.Load(contactID)
	return !hidden, nil
}

func (p *blindPolicy) Scope(_ context.Context, contactID string) (messaging.Scope, error) {
	_, hidden := p.blind.Load(contactID)
	return messaging.Scope{All: !hidden}, nil
}

// BenchmarkStreamsThatSeeNothing measures what idle streams cost a send (issue 29:
// at most 1.1x): two Services over two stores of one backend, each with a
// stream of the sender's that reads every event; one of them also with
// 10,000 idle streams of 1,000 callers, half narrowed to conversations
// that get no traffic, half of callers the Policy keeps from the sends'
// conversation. Sends go in alternating blocks of 50, each block ending
// when the sender's stream has read its events; the process's CPU time
// (user and system, all goroutines: the Feed and the streams' readers
// included) per send of each side and their ratio are reported, with the
// memory (heap and goroutine stacks) per idle stream and its reader.
//
//	go test ./events -run '^$' -bench StreamsThatSeeNothing -benchtime 1000x -count 3
func BenchmarkStreamsThatSeeNothing(b *testing.B) {
	const callers, perCaller, block = 1000, 10, 50
	for _, backend := range backendtest.All(b) {
		b.Run(backend.Name, func(b *testing.B) {
			ctx := context.Background()
			plain := newIdleBench(b, backend.New(b))
			busy := newIdleBench(b, backend.New(b))
			runtime.GC()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			for i := range callers {
				c, err := busy.msgs.SaveContact(ctx, messaging.Contact{Username: fmt.Sprintf("idle%d", i)})
				require.NoError(b, err)
				o := events.SubscribeOptions{ConversationID: fmt.Sprintf("quiet-%d", i)}
				if i%2 == 1 {
					busy.pol.blind.Store(c.ID, true)
					o = events.SubscribeOptions{}
				}
				for range perCaller {
					s, err := busy.msgs.Events().Subscribe(ctx, c, o)
					require.NoError(b, err)
					go func() {
						for {
							if _, err := s.Next(ctx); err != nil {
								return
							}
						}
					}()
					b.Cleanup(s.Close)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&m1)
			for i := range block { // warm up
				plain.send(b, i)
				busy.send(b, i)
			}
			plain.drain(b, block)
			busy.drain(b, block)
			var cpu [2]time.Duration
			b.ResetTimer()
			for done := 0; done < b.N; done += block {
				for k, s := range []*idleBench{plain, busy} {
					start := processCPU(b)
					for i := range block {
						s.send(b, done+i)
					}
					s.drain(b, block)
					cpu[k] += processCPU(b) - start
				}
			}
			b.StopTimer()
			n := float64((b.N + block - 1) / block * block)
			b.ReportMetric(float64(cpu[0].Nanoseconds())/n, "cpu-ns/send")
			b.ReportMetric(float64(cpu[1].Nanoseconds())/n, "cpu-ns/send-idle-streams")
			b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "cpu-ratio")
			b.ReportMetric((float64(m1.HeapInuse+m1.StackInuse)-float64(m0.HeapInuse+m0.StackInuse))/(callers*perCaller), "B/stream")
		})
	}
}

// idleBench is a Service whose sender reads its own events.
type idleBench struct {
	msgs  *messaging.Service
	pol   *blindPolicy
	alice messaging.Contact
	own   *events.Subscription
}

func newIdleBench(b *testing.B, store storetest.Store) *idleBench {
	ctx := context.Background()
	s := &idleBench{pol: &blindPolicy{}}
	s.msgs = svctest.New(b, storetest.Storage(store), nil, &messaging.Options{Logger: quiet, Policy: s.pol, Events: &events.Options{Logger: quiet}})
	var err error
	s.alice, err = s.msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(b, err)
	s.own, err = s.msgs.Events().Subscribe(ctx, s.alice, events.SubscribeOptions{})
	require.NoError(b, err)
	b.Cleanup(s.own.Close)
	return s
}

func (s *idleBench) send(b *testing.B, i int) {
	_, err := s.msgs.Create(context.Background(), s.alice, messaging.NewMessage{
		ConversationID: fmt.Sprintf("bench-%d", i%10),
		Text:           "a message of an ordinary length, about as long as a chat message is",
	})
	if err != nil {
		b.Fatal(err)
	}
}

// drain reads n events of the sender's own stream.
func (s *idleBench) drain(b *testing.B, n int) {
	for range n {
		if _, err := s.own.Next(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// processCPU is the CPU time the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
