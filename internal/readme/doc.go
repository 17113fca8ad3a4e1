// Package readme holds the tests that the README holds when pasted: its
// embedding program, in a fresh module, builds and serves (create_dir
// makes its files folder; its contact is saved before the authenticator
// names it); its walk through the API runs in bash against the example
// server, with bob's event stream open beside it; and the walk's download
// line fetches a signed bucket URL without the Authorization header that
// S3 and MinIO refuse. It has no code of its own.
//
//	go test ./internal/readme     # needs bash, curl and jq for the walk
package readme
