package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// targetConfig is what the flags say about one server under load.
type targetConfig struct {
	Name       string // "A" or "B", in reports
	URL        string // base URL, without /v1
	Token      string // bearer token, sent on every request ("" for none)
	User       string // the token's username: the reactor of react
	Conv       string // the conversation list, deep, get and react read
	CreateConv string // the conversation create posts to
	Cursor     string // starting_after of deep; found by paging when ""
}

// target is a server under load: its HTTP client (a pool of keep-alive
// connections of its own) and what preparation found in it.
type target struct {
	targetConfig
	base   string
	client *http.Client

	prepared    bool
	ids         []string          // messages of Conv, for get and react
	unsupported map[string]string // op -> why it cannot run here
	upload      uploadBody
}

// checkLoopback returns an error unless raw is an http URL whose host is,
// or resolves only to, loopback addresses.
func checkLoopback(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", raw)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); ip != nil {
		if !ip.IsLoopback() {
			return fmt.Errorf("%s is not a loopback address (pass -allow-remote to load another machine)", host)
		}
		return nil
	}
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if !a.IP.IsLoopback() {
			return fmt.Errorf("%s resolves to %s, not a loopback address (pass -allow-remote to load another machine)", host, a.IP)
		}
	}
	return nil
}

// dialLoopbackOnly refuses, at connect time, any address that is not
// loopback (whatever a resolver said before).
func dialLoopbackOnly(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("refusing to connect to %s: not loopback", address)
	}
	return nil
}

// newTarget returns a target with a client tuned for conns keep-alive
// connections.
func newTarget(ctx context.Context, c targetConfig, conns int, timeout time.Duration, allowRemote bool, uploadSize int64) (*target, error) {
	if !allowRemote {
		if err := checkLoopback(ctx, c.URL); err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	if _, err := url.Parse(c.URL); err != nil {
		return nil, fmt.Errorf("%s: %w", c.Name, err)
	}
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	if !allowRemote {
		d.Control = dialLoopbackOnly
	}
	tr := &http.Transport{
		Proxy:                 nil, // never through a proxy
		DialContext:           d.DialContext,
		MaxIdleConns:          conns,
		MaxIdleConnsPerHost:   conns,
		MaxConnsPerHost:       conns,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		ResponseHeaderTimeout: timeout,
		WriteBufferSize:       64 << 10,
		ReadBufferSize:        16 << 10,
	}
	t := &target{
		targetConfig: c,
		base:         strings.TrimRight(c.URL, "/"),
		client:       &http.Client{Transport: tr, Timeout: timeout},
		unsupported:  map[string]string{},
	}
	t.upload = newUploadBody(c.CreateConv, uploadSize)
	return t, nil
}

// close drops the target's idle connections.
func (t *target) close() { t.client.CloseIdleConnections() }

// do sends one request and reads the response body to its end (so that the
// connection is reused); it returns the status, and the body when keep is
// true.
func (t *target) do(ctx context.Context, method, path string, body io.Reader, length int64, ctype string, keep bool) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, t.base+path, body)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.ContentLength = length
		req.Header.Set("Content-Type", ctype)
	}
	if t.Token != "" {
		req.Header.Set("Authorization", "Bearer "+t.Token)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if keep {
		b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		return resp.StatusCode, b, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil, err
}

// page is the part of a list response preparation reads.
type page struct {
	HasMore bool `json:"has_more"`
	Data    []struct {
		ID string `json:"id"`
	} `json:"data"`
}

// list reads a page of Conv.
func (t *target) list(ctx context.Context, limit int, after string) (page, error) {
	q := url.Values{"conversation_id": {t.Conv}, "limit": {strconv.Itoa(limit)}}
	if after != "" {
		q.Set("starting_after", after)
	}
	status, body, err := t.do(ctx, http.MethodGet, "/v1/messages?"+q.Encode(), nil, 0, "", true)
	if err != nil {
		return page{}, err
	}
	if status != http.StatusOK {
		return page{}, fmt.Errorf("GET /v1/messages?%s: %d %s", q.Encode(), status, snippet(body))
	}
	var p page
	if err := json.Unmarshal(body, &p); err != nil {
		return page{}, fmt.Errorf("GET /v1/messages: %w", err)
	}
	return p, nil
}

// snippet is the start of a response body, for error messages.
func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// prepare finds in the server what ops need (messages to get and react
// to, a deep cursor) and sends each op once, marking as unsupported those
// the server has no route for. It runs once per target, before its first
// run.
func (t *target) prepare(ctx context.Context, ops []string, m mix, depth int, log io.Writer) error {
	if t.prepared {
		return nil
	}
	t.prepared = true
	need := map[string]bool{}
	for _, o := range ops {
		if o == "mix" {
			for _, p := range m {
				need[p.op] = true
			}
			continue
		}
		need[o] = true
	}
	if t.Conv == "" && (need["list"] || need["deep"] || need["get"] || need["react"]) {
		return fmt.Errorf("%s: -conv is required for list, deep, get and react", t.Name)
	}

	if need["get"] || need["react"] || need["list"] {
		p, err := t.list(ctx, 100, "")
		if err != nil {
			return fmt.Errorf("%s: %w", t.Name, err)
		}
		if len(p.Data) == 0 && (need["get"] || need["react"]) {
			fmt.Fprintf(log, "%s: conversation %s is empty: posting 20 messages to it\n", t.Name, t.Conv)
			for i := range 20 {
				form := url.Values{"conversation_id": {t.Conv}, "message": {"loadtest message " + strconv.Itoa(i)}}.Encode()
				status, body, err := t.do(ctx, http.MethodPost, "/v1/messages", strings.NewReader(form), int64(len(form)), formType, true)
				if err != nil {
					return fmt.Errorf("%s: POST /v1/messages: %w", t.Name, err)
				}
				if status/100 != 2 {
					return fmt.Errorf("%s: POST /v1/messages: %d %s", t.Name, status, snippet(body))
				}
			}
			if p, err = t.list(ctx, 100, ""); err != nil {
				return fmt.Errorf("%s: %w", t.Name, err)
			}
		}
		for _, d := range p.Data {
			t.ids = append(t.ids, d.ID)
		}
	}

	if need["deep"] && t.Cursor == "" {
		cursor, found, err := t.findCursor(ctx, depth)
		if err != nil {
			return fmt.Errorf("%s: %w", t.Name, err)
		}
		switch {
		case found == 0:
			t.unsupported["deep"] = "conversation " + t.Conv + " is empty"
		case found < depth:
			fmt.Fprintf(log, "%s: conversation %s is shorter than -depth %d: deep reads after the message %d deep\n", t.Name, t.Conv, depth, found)
		}
		t.Cursor = cursor
	}

	// Send each op once: a 404, 405 or 501 means the server has no such
	// route (the floor serves no GET or PUT /v1/messages/{id}).
	w := t.newWorker(0)
	for _, o := range sortedKeys(need) {
		if _, ok := t.unsupported[o]; ok {
			continue
		}
		if (o == "get" || o == "react") && len(t.ids) == 0 {
			t.unsupported[o] = "no message to read in " + t.Conv
			continue
		}
		status, err := opTable[o].do(ctx, w)
		if err == nil && o == "react" && w.reacted != "" {
			// Take the reaction back: it would be on the first page that
			// list reads, which then costs more than the floor's.
			var back int
			if back, err = opTable[o].do(ctx, w); err == nil && back/100 != 2 {
				err = fmt.Errorf("taking the trial reaction back answers %d", back)
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %s: %w", t.Name, o, err)
		}
		switch status {
		case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
			t.unsupported[o] = fmt.Sprintf("%s answers %d", opTable[o].route, status)
		case http.StatusUnauthorized:
			return fmt.Errorf("%s: %s answers 401: check the token (-token, -token-b)", t.Name, opTable[o].route)
		default:
			if status/100 != 2 {
				fmt.Fprintf(log, "%s: %s answers %d: its requests will count as errors\n", t.Name, opTable[o].route, status)
			}
		}
	}
	var missing []string
	for _, p := range m {
		if _, ok := t.unsupported[p.op]; ok {
			missing = append(missing, p.op)
		}
	}
	if len(missing) > 0 {
		t.unsupported["mix"] = "the mix has " + strings.Join(missing, ", ") + ", which this server does not serve (choose another -mix)"
	}
	return nil
}

// findCursor pages through Conv, 100 at a time, to the message depth
// deep, and returns its id and the depth reached. When the conversation is
// shorter, it returns the message 11th from the oldest (so that a page
// after it is a full page of 10), or the newest of fewer than 11.
func (t *target) findCursor(ctx context.Context, depth int) (string, int, error) {
	var after string
	var last []string // the last 11 ids seen
	found := 0
	for found < depth {
		p, err := t.list(ctx, min(100, depth-found), after)
		if err != nil {
			return "", 0, err
		}
		for _, d := range p.Data {
			after = d.ID
			last = append(last, d.ID)
			if len(last) > 11 {
				last = last[1:]
			}
			found++
		}
		if found < depth && (!p.HasMore || len(p.Data) == 0) {
			if found == 0 {
				return "", 0, nil
			}
			return last[0], found - len(last) + 1, nil
		}
	}
	return after, found, nil
}

// errTooLong is returned when a planned load would run longer than allowed.
var errTooLong = errors.New("the planned load runs longer than an hour: lower -d, -rounds or the number of -ops")
