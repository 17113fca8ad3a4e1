// Package readme holds the tests that the README holds when pasted: its
// embedding program, in a fresh module, builds and serves (create_dir
// makes its files folder; its contact is saved before the authenticator
// names it), delivers a message's event to an open stream and to its
// handler, and stops within a second of SIGTERM with ten streams open; its
// pub/sub lines build in place of the program's messaging.New; its walk through the API runs in bash against the example
// server, with bob's event stream open beside it; and the walk's download
// line fetches a signed bucket URL without the Authorization header that
// S3 and MinIO refuse. It has no code of its own.
//
//	go test ./internal/readme     # needs bash, curl and jq for the walk
package readme
