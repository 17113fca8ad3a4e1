// Package httpadapter serves Parley's /v1 HTTP API over a messaging.Service
// (with the files and events it built). The API (routes, parameters,
// uploads, file URLs) is in the project's README.md, and completely in the
// OpenAPI 3.1 document that OpenAPI returns and the handler serves at GET
// /v1/openapi.json, the one path that needs no authentication.
//
// New returns an http.Handler for request paths that start with /v1: mount
// it at the root, or under a prefix with http.StripPrefix (file_url and
// Location carry it). The host says who sent each request with an
// Authenticator: BearerToken over its own token lookup, StaticTokens for
// examples and tests, or an AuthenticatorFunc (a session cookie, an API key).
//
//	msgs, err := messaging.New(ctx, store, blobs, nil) // store: sqlstore.Open(…) or memstore.New()
//	api, err := httpadapter.New(msgs, &httpadapter.Options{
//		Authenticator: httpadapter.StaticTokens(map[string]messaging.Contact{"secret-token": alice}),
//	})
//	if err != nil {
//		log.Fatal(err)
//	}
//	mux := http.NewServeMux()
//	mux.Handle("/api/", http.StripPrefix("/api", api)) // the API at /api/v1/…
//	log.Fatal(http.ListenAndServe(":8080", mux))
//
// Every response body is one JSON object, except a file's bytes and an
// event stream. GET /v1/events (with Options.Events) serves the caller's
// events as Server-Sent Events that resume after Last-Event-ID, or as a
// list; streams end when the http.Server shuts down (the handler registers
// with RegisterOnShutdown), and Options limit them per caller and in all,
// counted by each handler (instance) on its own: with n instances a caller
// may hold n times MaxStreamsPerCaller streams.
// POSTs and PUTs of messages and attachments take an Idempotency-Key
// header: a retry with the same parameters gets the first answer again,
// with Idempotent-Replayed: true. A retry while the first request runs is
// a 409 on the same instance (and for an upload on any); a send or edit
// retried on another instance over the same database meanwhile is made
// once and answered with the result (see the messaging package's
// "Retries").
//
// # Errors
//
// A failure answers {"error": {"type", "code", "message", "param"}}, param
// only where one field is at fault. The kind of the services' error decides
// the status:
//
//	kind                 status  type                   code
//	ErrInvalid           400     invalid_request_error  parameter_missing, parameter_invalid (body_invalid: unparseable)
//	ErrInvalid (reused)  400     idempotency_error      idempotency_key_reused (an Idempotency-Key with other parameters)
//	ErrUnauthenticated   401     authentication_error   unauthenticated        + WWW-Authenticate: Bearer
//	ErrPermission        403     permission_error       permission_denied (cross_origin_denied: Options.CrossOriginProtection)
//	ErrNotFound          404     not_found_error        resource_missing       (also unknown paths)
//	(wrong method)       405     invalid_request_error  method_not_allowed     + Allow
//	ErrConflict          409     conflict_error         conflict (idempotency_key_in_use, + Retry-After: a retry under way)
//	ErrTooLarge          413     invalid_request_error  too_large              (also a body over its limit)
//	(Content-Type)       415     invalid_request_error  unsupported_media_type
//	(Options.Limit)      429     rate_limit_error       rate_limited           + Retry-After
//	(stream limits)      429     rate_limit_error       too_many_streams       + Retry-After
//	ErrUnimplemented     501     api_error              unimplemented
//	ErrUnavailable       503     api_error              unavailable            + Retry-After
//	anything else        500     api_error              internal_error
//
// The message of a 4xx is the *messaging.Error's, written for people. A 500
// says only "internal error"; the error goes to Options.Logger with the
// request id that the response carries in its Request-Id header.
package httpadapter
