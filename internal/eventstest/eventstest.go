// Package eventstest holds the test seam of package events, out of the
// hosts' sight: a gate that holds delivery back, for tests of what happens
// to events recorded and not yet delivered (a crash, a restart).
package eventstest

import "context"

type gateKey struct{}

// WithGate returns ctx carrying gate. A Feed built with it (events.New,
// through messaging.New) calls gate before each round of delivery, to
// subscriptions and to handlers alike: the round waits while gate blocks,
// and is skipped when it returns an error. The events are still recorded.
func WithGate(ctx context.Context, gate func(ctx context.Context) error) context.Context {
	return context.WithValue(ctx, gateKey{}, gate)
}

// Gate returns the gate ctx carries, or nil.
func Gate(ctx context.Context) func(ctx context.Context) error {
	g, _ := ctx.Value(gateKey{}).(func(ctx context.Context) error)
	return g
}

// Hold is a gate that holds delivery until the Feed closes.
func Hold(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}
