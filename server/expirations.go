package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/ebb-data/ebb"
)

// ExpirationReader is implemented by an Admin that keeps the log of
// expirations; *ebb.DB does. With it the Server serves GET /v1/expirations.
type ExpirationReader interface {
	Expirations(ctx context.Context, q ebb.ExpirationsQuery) (ebb.ExpirationsPage, error)
}

var _ ExpirationReader = (*ebb.DB)(nil)

// Bounds of GET /v1/expirations.
const (
	// MaxExpirationsTimeout bounds a long poll's timeout.
	MaxExpirationsTimeout = 5 * time.Minute
	// sseKeepAlive is how often an idle event stream sends a comment, so
	// that proxies and clients see it alive.
	sseKeepAlive = 15 * time.Second
	// ssePage is how long one read of an event stream waits for events
	// before it writes its keep-alive.
	ssePage = sseKeepAlive
)

const expirationsPattern = "GET /v1/expirations"

// routeExpirations registers GET /v1/expirations. Every token may call it:
// what it answers is filtered by the token's scopes, event by event (an
// expiration is visible to a token that may read what it names), so the
// route has no resource of its own. It is not admitted as a read: a long
// poll or an event stream spends its time waiting, and must not hold one
// of the read slots meanwhile; its reads are small pages.
func (s *Server) routeExpirations() {
	query := []string{"after", "limit", "timeout"}
	s.mux.setQuery(expirationsPattern, query)
	s.mux.HandleFunc(expirationsPattern, s.observe(expirationsPattern, func(w http.ResponseWriter, r *http.Request) {
		visible, err := s.expirationScope(r)
		if err != nil {
			s.refuseUnread(w, r, expirationsPattern, err)
			return
		}
		if err := checkQuery(r, query); err != nil {
			s.refuseUnread(w, r, expirationsPattern, err)
			return
		}
		if err := s.expirations(w, r, visible); err != nil {
			if w.(*statusWriter).wrote {
				if r.Context().Err() == nil {
					s.log.Warn("event stream ended by an error", "route", expirationsPattern, "err", err)
				}
				return
			}
			s.writeError(w, r, expirationsPattern, err)
		}
	}))
}

// expirationScope authenticates the request and returns which events its
// token may see: those of the resources its scopes reach for a GET.
func (s *Server) expirationScope(r *http.Request) (func(*ebb.Expiration) bool, error) {
	if s.auth == nil {
		return nil, nil
	}
	t, err := s.auth.authenticate(r)
	if err != nil {
		return nil, err
	}
	sc := t.scopes
	return func(ev *ebb.Expiration) bool {
		return sc.allowsRequest(http.MethodGet, Resource{Kind: ev.Kind, Name: ev.Name})
	}, nil
}

// expirations answers a page of the log after the cursor (long-polling up
// to timeout when there is none yet), or, for a client that accepts
// text/event-stream, streams the log as Server-Sent Events.
func (s *Server) expirations(w http.ResponseWriter, r *http.Request, visible func(*ebb.Expiration) bool) error {
	reader, ok := s.admin.(ExpirationReader)
	if !ok {
		return Errorf(http.StatusNotFound, CodeNotFound, "this server keeps no log of expirations")
	}
	limit, err := ParseLimit(r)
	if err != nil {
		return err
	}
	var timeout time.Duration
	if v := queryGet(r, "timeout"); v != "" {
		if timeout, err = ParseDuration(v); err != nil {
			return err
		}
		if timeout > MaxExpirationsTimeout {
			return Errorf(http.StatusBadRequest, CodeInvalidArgument, "timeout %s is above %s", v, MaxExpirationsTimeout)
		}
	}
	after := queryGet(r, "after")
	// A shutdown ends the wait: the long poll answers what it has, the
	// stream ends, and the client comes back to another replica.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.draining, cancel)()
	r = r.WithContext(ctx)
	if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		if id := r.Header.Get("Last-Event-ID"); id != "" && after == "" {
			after = id
		}
		return s.streamExpirations(w, r, reader, ebb.ExpirationsQuery{After: after, Limit: limit, Visible: visible}, timeout)
	}
	// A long poll outlives the read deadline of its request.
	if timeout > 0 {
		_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	}
	p, err := reader.Expirations(r.Context(), ebb.ExpirationsQuery{After: after, Limit: limit, Wait: timeout, Visible: visible})
	if err != nil && s.draining.Err() != nil && errors.Is(err, context.Canceled) {
		p, err = ebb.ExpirationsPage{Expirations: []ebb.Expiration{}, Next: after}, nil
	}
	if err != nil {
		return err
	}
	return WriteJSON(w, http.StatusOK, p)
}

// streamExpirations writes the log as Server-Sent Events: each expiration
// an event "expiration" whose id is its cursor, so that a client
// reconnecting with Last-Event-ID resumes after it; an id-only block after
// a page whose events the token may not see moves the client's last id on
// without an event. A timeout, if given, ends the stream. Where the
// response cannot be flushed as it goes (the hot listener writes it
// whole), the stream is one page, waited for up to ssePage: the client
// reconnects with its last id.
func (s *Server) streamExpirations(w http.ResponseWriter, r *http.Request, reader ExpirationReader, q ebb.ExpirationsQuery, timeout time.Duration) error {
	rc := http.NewResponseController(w)
	ctx := r.Context()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	// Check the cursor (and that the log is on) before the 200.
	first, err := reader.Expirations(ctx, q)
	if err != nil {
		return err
	}
	_ = rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	streaming := rc.Flush() == nil
	page := first
	for {
		var buf bytes.Buffer
		for _, ev := range page.Expirations {
			doc, err := json.Marshal(ev)
			if err != nil {
				return err
			}
			buf.WriteString("id: " + ev.Cursor + "\nevent: expiration\ndata: ")
			buf.Write(doc)
			buf.WriteString("\n\n")
		}
		last := q.After
		if n := len(page.Expirations); n > 0 {
			last = page.Expirations[n-1].Cursor
		}
		if page.Next != last {
			buf.WriteString("id: " + page.Next + "\n\n")
		}
		if buf.Len() == 0 {
			buf.WriteString(": keep-alive\n\n")
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return err
		}
		if !streaming {
			return nil
		}
		if err := rc.Flush(); err != nil {
			return err
		}
		q.After = page.Next
		q.Wait = ssePage
		page, err = reader.Expirations(ctx, q)
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
