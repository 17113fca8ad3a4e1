package httpadapter

import (
	"context"
	"database/sql"
	"errors"
	"net/http"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
)

// Error types of the API's error object.
const (
	typeInvalidRequest = "invalid_request_error"
	typeAuthentication = "authentication_error"
	typePermission     = "permission_error"
	typeNotFound       = "not_found_error"
	typeConflict       = "conflict_error"
	typeAPI            = "api_error"
	typeRateLimit      = "rate_limit_error"
	typeIdempotency    = "idempotency_error"
)

// Error codes beyond messaging.CodeMissing and messaging.CodeInvalid.
const (
	codeBodyInvalid      = "body_invalid"
	codeUnauthenticated  = "unauthenticated"
	codePermission       = "permission_denied"
	codeCrossOrigin      = "cross_origin_denied"
	codeNotFound         = "resource_missing"
	codeMethod           = "method_not_allowed"
	codeConflict         = "conflict"
	codeTooLarge         = "too_large"
	codeMediaType        = "unsupported_media_type"
	codeRange            = "range_not_satisfiable"
	codePrecondition     = "precondition_failed"
	codeUnimplemented    = "unimplemented"
	codeUnavailable      = "unavailable"
	codeInternal         = "internal_error"
	codeRateLimit        = "rate_limited"
	codeTooManyStreams   = "too_many_streams"
	retryAfterSeconds    = "5"
	internalErrorMessage = "internal error"
)

// apiError is the error object of a failed request, as the client sees it.
type apiError struct {
	status  int
	Type    string `json:"type"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"`
}

type errorBody struct {
	Error *apiError `json:"error"`
}

// httpError is an error the adapter itself raises with a given status (405,
// 413 of a body, 415, …). It is never returned by the services.
type httpError struct{ apiError }

func (e *httpError) Error() string { return e.Message }

func newHTTPError(status int, typ, code, msg string) *httpError {
	return &httpError{apiError{status: status, Type: typ, Code: code, Message: msg}}
}

func bodyInvalid(msg string) error {
	return newHTTPError(http.StatusBadRequest, typeInvalidRequest, codeBodyInvalid, msg)
}

func unsupportedMediaType(msg string) error {
	return newHTTPError(http.StatusUnsupportedMediaType, typeInvalidRequest, codeMediaType, msg)
}

// errUnauthenticated answers a request without usable credentials.
var errUnauthenticated = &messaging.Error{Kind: messaging.ErrUnauthenticated,
	Message: "authentication required: send Authorization: Bearer <token>"}

// errUnknownToken answers a request whose bearer token the Authenticator
// refused.
var errUnknownToken = &messaging.Error{Kind: messaging.ErrUnauthenticated, Message: "invalid bearer token"}

// classify turns err into the error object the client sees: the one table
// from error kind to HTTP status, type and code. Messages of *messaging.Error
// values are written for people and shown as they are; any other error is
// "internal error".
func classify(err error) *apiError {
	var he *httpError
	if errors.As(err, &he) {
		e := he.apiError
		return &e
	}
	var ke *messaging.Error
	hasKE := errors.As(err, &ke)
	k := messaging.KindOf(err)
	msg := func(def string) string {
		if hasKE && ke.Kind != 0 && ke.Message != "" {
			return ke.Message
		}
		return def
	}
	param := ""
	if hasKE {
		param = ke.Param
	}
	switch k {
	case messaging.ErrInvalid:
		code := messaging.CodeInvalid
		if hasKE && ke.Code != "" {
			code = ke.Code
		}
		typ := typeInvalidRequest
		if code == messaging.CodeKeyReused {
			typ = typeIdempotency
		}
		return &apiError{status: http.StatusBadRequest, Type: typ, Code: code, Message: msg("invalid request"), Param: param}
	case messaging.ErrUnauthenticated:
		return &apiError{status: http.StatusUnauthorized, Type: typeAuthentication, Code: codeUnauthenticated, Message: msg("authentication required")}
	case messaging.ErrPermission:
		return &apiError{status: http.StatusForbidden, Type: typePermission, Code: codePermission, Message: msg("permission denied"), Param: param}
	case messaging.ErrNotFound:
		return &apiError{status: http.StatusNotFound, Type: typeNotFound, Code: codeNotFound, Message: msg("not found"), Param: param}
	case messaging.ErrConflict:
		code := codeConflict
		if hasKE && ke.Code != "" {
			code = ke.Code
		}
		return &apiError{status: http.StatusConflict, Type: typeConflict, Code: code, Message: msg("conflict"), Param: param}
	case messaging.ErrTooLarge:
		code := codeTooLarge
		if hasKE && ke.Code != "" {
			code = ke.Code // attachments.CodeQuotaExceeded
		}
		return &apiError{status: http.StatusRequestEntityTooLarge, Type: typeInvalidRequest, Code: code, Message: msg("too large"), Param: param}
	case messaging.ErrUnimplemented:
		return &apiError{status: http.StatusNotImplemented, Type: typeAPI, Code: codeUnimplemented, Message: msg("not implemented")}
	case messaging.ErrUnavailable:
		return &apiError{status: http.StatusServiceUnavailable, Type: typeAPI, Code: codeUnavailable, Message: "service unavailable, try again later"}
	}
	return &apiError{status: http.StatusInternalServerError, Type: typeAPI, Code: codeInternal, Message: internalErrorMessage}
}

// writeError answers err. Unexpected errors (500) and unavailable backends
// (503) are logged with a request id that is also sent in the Request-Id
// header; their text never reaches
// the client. A request that failed because its client hung up (err is
// context.Canceled and so is the request's context) is only logged at
// Debug: nothing went wrong on the server's side, and nobody reads the
// answer.
func (a *api) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if messaging.KindOf(err) == 0 && errors.Is(err, context.DeadlineExceeded) {
		// A deadline passed while a backend worked: it did not answer in
		// time, which is what 503 says, whoever's deadline it was.
		err = &messaging.Error{Kind: messaging.ErrUnavailable, Message: "a backend did not answer in time", Err: err}
	}
	e := classify(err)
	// A transaction the driver found done (database/sql.ErrTxDone) after the
	// request's context ended was rolled back or committed for the client
	// that left: its end, not a failure of the server's.
	hungUp := errors.Is(err, context.Canceled) || errors.Is(err, sql.ErrTxDone)
	if e.status >= http.StatusInternalServerError && hungUp && r.Context().Err() != nil {
		a.log.DebugContext(r.Context(), "httpadapter: request canceled by the client", "method", r.Method, "path", r.URL.Path, "err", err)
		writeJSON(w, e.status, errorBody{Error: e})
		return
	}
	h := w.Header()
	switch e.status {
	case http.StatusUnauthorized:
		if errors.As(err, new(refusedToken)) {
			h.Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		} else {
			h.Set("WWW-Authenticate", "Bearer")
		}
	case http.StatusConflict:
		if e.Code == messaging.CodeKeyInUse {
			h.Set("Retry-After", "1") // the first request is under way
		}
	case http.StatusServiceUnavailable:
		reqID := ids.New("req_")
		h.Set("Request-Id", reqID)
		h.Set("Retry-After", retryAfterSeconds)
		a.log.WarnContext(r.Context(), "httpadapter: backend unavailable", "request_id", reqID, "method", r.Method, "path", r.URL.Path, "err", err)
	case http.StatusInternalServerError, http.StatusNotImplemented:
		reqID := ids.New("req_")
		h.Set("Request-Id", reqID)
		a.log.ErrorContext(r.Context(), "httpadapter: request failed", "request_id", reqID, "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, e.status, errorBody{Error: e})
}

// badParam reports a malformed parameter of a request.
func badParam(param, msg string) error {
	return &messaging.Error{Kind: messaging.ErrInvalid, Code: messaging.CodeInvalid, Param: param, Message: msg}
}

// missing reports a required parameter that a request lacks.
func missing(param string) error {
	return &messaging.Error{Kind: messaging.ErrInvalid, Code: messaging.CodeMissing, Param: param, Message: "missing required parameter: " + param}
}
