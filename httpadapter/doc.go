// Package httpadapter serves the /v1 HTTP API of Parley over a
// messaging.Service and an attachments.Service.
//
// New returns an http.Handler for request paths that start with /v1. It
// builds its routes once, authenticates every request, and writes every
// response body as one JSON object (Content-Type: application/json;
// charset=utf-8) except the bytes of an attachment's file. Mount it at the
// root of a server, or under any prefix of any mux with http.StripPrefix:
//
//	store, blobs := memstore.New(), memstore.NewBlobStore() // or sqlstore, blobstore
//	msgs := messaging.New(store, nil)
//	files := attachments.New(store, blobs, msgs, nil)
//	alice, _ := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
//	api, err := httpadapter.New(msgs, files, &httpadapter.Options{
//		Authenticator: httpadapter.StaticTokens(map[string]messaging.Contact{"secret-token": alice}),
//	})
//	if err != nil {
//		log.Fatal(err) // a malformed Options.BaseURL
//	}
//	mux := http.NewServeMux()
//	mux.Handle("/api/", http.StripPrefix("/api", api)) // the API at /api/v1/…
//	http.ListenAndServe(":8080", mux)
//
// # Routes
//
//	GET, POST          /v1/messages
//	GET, PUT, DELETE   /v1/messages/{id}
//	DELETE             /v1/messages/{id}/reactions/{name}
//	GET, POST          /v1/attachments
//	GET, PUT, DELETE   /v1/attachments/{id}
//	GET                /v1/attachments/{id}/{filename}   the file's bytes
//
// Every GET route also answers HEAD. Any other path is a 404 and any other
// method on these paths a 405 with an Allow header, both as JSON error
// objects. A path that is not clean (//, . or .. segments) is a 404 too
// rather than a redirect. Revisions and Idempotency-Key are not served yet.
//
// # Authentication
//
// Every request, whatever its path, is authenticated: Options.Authenticator
// sees the request and maps its credentials (by default a bearer token;
// BearerToken, StaticTokens) to a stored contact. Without one, every request
// is a 401. A 401 carries WWW-Authenticate: Bearer (with
// error="invalid_token" when a bearer token was sent but refused). Unsafe
// requests from another origin that carry no bearer token are refused with
// a 403 before authentication (Options.CrossOriginProtection). After authentication the handler calls
// messaging.Service.Touch, which moves the contact's last_active_at at most
// once a minute; a failure there is logged and does not fail the request.
//
// # Request bodies
//
// Writes take application/x-www-form-urlencoded, multipart/form-data or
// application/json, with the same field names; any other Content-Type is a
// 415, and so is a body without a Content-Type (an empty body without one
// has no parameters). Arrays use bracket notation in forms
// (attachments[]=att_1, also attachments[0]=att_1 or a repeated
// attachments=att_1; reactions[thumbs_up][]=alice) and arrays and objects in
// JSON ("attachments": ["att_1"]; "reactions": [{"thumbs_up": ["alice"]}] or
// {"thumbs_up": ["alice"]}). read is true or false (a JSON boolean in
// JSON). A JSON null counts as an absent field. Reactions keep the order in
// which the body names them.
//
// A single-valued parameter given twice (also a repeated JSON key) is a 400
// parameter_invalid naming it; a JSON value of the wrong type is a 400
// parameter_invalid naming the parameter; a body that cannot be parsed is a
// 400 body_invalid. Parameters the endpoint does not know are ignored, as
// at Stripe, so that clients can send newer fields to older servers. A body
// beyond Options.MaxBodyBytes (default 1 MiB) is a 413. List parameters
// come in the query string: conversation_id, limit (an integer from 1 to the
// services' maximum, default 10), starting_after, ending_before.
//
// # Uploads
//
// POST /v1/attachments takes multipart/form-data only, and streams the one
// part named "file" into the blob store (r.MultipartReader; the file is
// never buffered whole). The optional fields conversation_id and message_id
// must come before the file part, since the upload is checked against them
// before its first byte is stored: either of them after the file part, or
// a second file part, is a 400 naming it. The parts after the file are read
// before the upload commits, so such a rejection stores nothing. With
// message_id the file is linked to that message of the caller's at once
// (messaging.Service.Attach). The file part must carry a filename (400
// param "file" otherwise; a missing file part is a 400 parameter_missing
// "file"). A file beyond attachments.Service.MaxUploadBytes is a 413 with
// param "file", and nothing of it is stored; the whole body may be at most
// MaxUploadBytes + MaxBodyBytes (the multipart framing and the other fields).
//
// # Responses
//
// A create answers 201 with a Location header holding the new resource's
// path under the mount prefix (for example /api/v1/messages/msg_…); other
// successes answer 200. A DELETE answers {"id": "…", "object": "message",
// "deleted": true}. Lists answer {"object": "list", "data": […],
// "has_more": …}.
//
// Every attachment in a response, also inside a message, carries file_url:
// <base>/v1/attachments/<id>/<file name, path-escaped>, where <base> is
// Options.BaseURL or, by default, derived from the request: https when the
// connection is TLS or X-Forwarded-Proto is "https" (trusted because it only
// changes URLs sent back to the same client), else http; r.Host; and the
// prefix that http.StripPrefix removed (r.RequestURI minus r.URL.Path). Set
// BaseURL behind a proxy that rewrites hosts or paths. With
// Options.SignedURLExpiry > 0 and a blob store that can sign URLs
// (attachments.URLSigner), file_url is a signed URL of the bucket instead.
//
// # Files
//
// GET /v1/attachments/{id}/{filename} serves the bytes with
// http.ServeContent: Range requests (206, 416), conditional requests (ETag
// is the quoted SHA-256 of the bytes, Last-Modified the upload time; 304,
// 412), HEAD. The file name in the path must be the attachment's current
// name, byte for byte: after a rename the old URL is a 404 (not a redirect),
// as a renamed file's old path is. Responses carry the stored Content-Type,
// X-Content-Type-Options: nosniff, Cache-Control: private,
// Content-Security-Policy: sandbox and Content-Disposition with the name (an
// ASCII fallback and RFC 8187 filename*): inline for the types
// attachments.Inline accepts (image/png, image/jpeg, image/gif, image/webp,
// image/avif, text/plain, audio/mpeg, audio/ogg, video/mp4 and video/webm),
// attachment for every other type (PDF, which can carry scripts, HTML, SVG,
// XML, scripts, unknown types), so that an uploaded file cannot run in the
// API's origin.
//
// # Errors
//
// A failure answers {"error": {"type", "code", "message", "param"}}, param
// only where one field is at fault. The kind of the services' error decides
// the status:
//
//	kind                 status  type                   code
//	ErrInvalid           400     invalid_request_error  parameter_missing, parameter_invalid
//	(unparseable body)   400     invalid_request_error  body_invalid
//	ErrUnauthenticated   401     authentication_error   unauthenticated       + WWW-Authenticate: Bearer
//	ErrPermission        403     permission_error       permission_denied
//	ErrNotFound          404     not_found_error        resource_missing      (also unknown paths, hidden resources)
//	(wrong method)       405     invalid_request_error  method_not_allowed    + Allow
//	ErrConflict          409     conflict_error         conflict
//	(failed If-Match)    412     invalid_request_error  precondition_failed
//	ErrTooLarge          413     invalid_request_error  too_large             (also a body over its limit)
//	(Content-Type)       415     invalid_request_error  unsupported_media_type
//	(bad Range)          416     invalid_request_error  range_not_satisfiable
//	(Options.Limit)      429     rate_limit_error       rate_limited          + Retry-After
//	ErrUnimplemented     501     api_error              unimplemented
//	ErrUnavailable       503     api_error              unavailable           + Retry-After: 5
//	anything else        500     api_error              internal_error
//
// The message of a 4xx is the *messaging.Error's message, written for
// people. A 500 says only "internal error": the error is logged to
// Options.Logger with a request id, which the response carries in its
// Request-Id header. No rate limiter is built in: Options.Limit plugs one in,
// asked once per authenticated request with the caller.
package httpadapter
