// Package parleytest gives tests a running Parley, in the spirit of
// net/http/httptest: the /v1 HTTP API on a local httptest.Server, over
// in-memory storage (memstore) and an in-memory bucket, with callers and
// their bearer tokens, and the Go services behind it, so that a host tests
// its own chat features against the real API without a database.
//
// A test starts one with New; it is closed when the test ends
// (testing.TB.Cleanup):
//
//	func TestWelcome(t *testing.T) {
//		chat := parleytest.New(t, nil)
//		err := chat.Caller("alice").Call("POST", "/v1/messages", url.Values{"conversation_id": {"team"}, "message": {"hi"}}, nil)
//		require.NoError(t, err)
//	}
//
// Server.Caller returns a caller by username, stored as a contact on first
// use with a token of its own; Caller.Call sends a request with its token
// and decodes the JSON answer, and a failure's error object is an *Error.
// Caller.Client is an *http.Client that adds the token to requests to the
// server (and never to other hosts, such as a bucket's signed URLs), for a
// host's own client code. The services are fields: Server.Messages and
// Server.Files take the callers' contacts (Caller.Contact), so a test can
// set up state in Go and check it over HTTP, or the other way round;
// Server.Events is the events Feed behind GET /v1/events, to subscribe to
// or to handle events with in Go. Server.Store and Server.Blobs are the
// in-memory storage, and Server.URL the address to give a host's code.
//
// Options pass options on to the services and to the adapter (a Policy, a
// smaller upload limit, the host's own Authenticator); Options.Setup runs
// with the built services before the server answers, to seed the contacts
// and memberships that the host's Authenticator and Policy look up. Outside a test (a
// TestMain, an Example), NewServer returns a Server that the caller closes.
//
// # Errors
//
// Caller.Call and Caller.Upload return an *Error for an answer that is not
// a 2xx (read it with errors.As: Status, Type, Code, Param, Message, as in
// the API's error object), and the transport's or the decoder's error
// otherwise. New fails the test, and NewServer returns an error, when the
// options are not valid or Options.Setup fails; Server.Caller panics on a username that is not
// valid (1 to 64 characters, no white space or brackets).
package parleytest
