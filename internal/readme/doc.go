// Package readme holds the test that the README's embedding program,
// pasted into a fresh module, builds and serves. It has no code of its own.
package readme
