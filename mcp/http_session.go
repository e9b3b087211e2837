package mcp

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"agentmail/jsonrpc"
)

// A legacy session starts with initialize, whose answer carries its id,
// and ends with DELETE. The id carries the revision initialize chose,
// signed, so that any process with the same key serves the session.
// Streams and subscriptions live in the process that serves them, unlike
// the session itself: a client behind a load balancer keeps them where it
// opened them, as it keeps the TCP connection they run on.

// sessionLifetime is how long a session id is valid after initialize
// made it. A DELETEd id is refused for the rest of its lifetime, and then
// forgotten, since its age alone refuses it.
const sessionLifetime = 24 * time.Hour

// keepAlive is how often an idle stream gets a comment, so that proxies
// and clients do not take it for dead.
const keepAlive = 30 * time.Second

// sessionIdle is how long a session may go without a request and
// without an open stream before the process ends what it holds for it
// (its subscriptions): a client that vanished without a DELETE leaves
// nothing behind for longer. The session itself stays valid; a client
// that comes back subscribes again.
const sessionIdle = 10 * time.Minute

// sessionState is what one process holds for a legacy session: its open
// stream, if any, its resource subscriptions, and when it was last used.
type sessionState struct {
	stream *sseWriter
	subs   *Subscriptions
	used   time.Time
}

// newSession returns a session id for a session of protocol version: the
// version, the time and 128 random bits, signed. Every character is
// visible ASCII.
func (h *HTTPHandler) newSession(version string) string {
	payload := version + "." + strconv.FormatInt(time.Now().Unix(), 10) + "." + rand.Text()
	return payload + "." + h.sign(payload)
}

func (h *HTTPHandler) sign(payload string) string {
	m := hmac.New(sha256.New, h.opt.SessionKey)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// sessionVersion checks a session id and returns its protocol version.
func (h *HTTPHandler) sessionVersion(session string) (string, bool) {
	i := strings.LastIndexByte(session, '.')
	if i < 0 {
		return "", false
	}
	payload, mac := session[:i], session[i+1:]
	if !hmac.Equal([]byte(mac), []byte(h.sign(payload))) {
		return "", false
	}
	version, rest, _ := strings.Cut(payload, ".")
	stamp, _, _ := strings.Cut(rest, ".")
	if !slices.Contains(LegacyVersions, version) || expired(stamp) {
		return "", false
	}
	h.mu.Lock()
	_, ended := h.ended[session]
	h.mu.Unlock()
	return version, !ended
}

// expired reports whether a session id made at stamp, Unix seconds, is
// past its lifetime (or, for a clock set back, made in the future).
func expired(stamp string) bool {
	made, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil {
		return true
	}
	age := time.Since(time.Unix(made, 0))
	return age > sessionLifetime || age < -time.Minute
}

// until is when a session id stops being valid anyway.
func until(session string) time.Time {
	_, rest, _ := strings.Cut(session, ".")
	stamp, _, _ := strings.Cut(rest, ".")
	made, _ := strconv.ParseInt(stamp, 10, 64)
	return time.Unix(made, 0).Add(sessionLifetime)
}

// state returns the state of a session, made on first use. h.mu must be
// held.
func (h *HTTPHandler) state(session string) *sessionState {
	ss := h.sessions[session]
	if ss == nil {
		ss = &sessionState{}
		ss.subs = NewSubscriptions(func(method string, params any) error {
			return h.notifySession(session, method, params)
		})
		h.sessions[session] = ss
	}
	ss.used = time.Now()
	return ss
}

// touch records a request of session, which keeps what the process holds
// for it.
func (h *HTTPHandler) touch(session string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ss := h.sessions[session]; ss != nil {
		ss.used = time.Now()
	}
}

// sweep ends what the process holds for the sessions idle at now: no
// request for sessionIdle and no stream open.
func (h *HTTPHandler) sweep(now time.Time) {
	var idle []string
	h.mu.Lock()
	for id, ss := range h.sessions {
		if ss.stream == nil && now.Sub(ss.used) > sessionIdle {
			idle = append(idle, id)
		}
	}
	h.mu.Unlock()
	for _, id := range idle {
		h.endSession(id)
	}
}

// subscriptions returns the subscriptions of a session.
func (h *HTTPHandler) subscriptions(session string) *Subscriptions {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state(session).subs
}

// notifySession sends a notification on the stream of session, if one is
// open; without one it is dropped, as the transport allows.
func (h *HTTPHandler) notifySession(session, method string, params any) error {
	h.mu.Lock()
	var st *sseWriter
	if ss := h.sessions[session]; ss != nil {
		st = ss.stream
	}
	h.mu.Unlock()
	if st == nil {
		return nil
	}
	if err := st.message(&jsonrpc.Notification{Method: method, Params: params}); err != nil {
		h.opt.Logf("http: dropped %s: %v", method, err)
	}
	return nil
}

// get opens the stream of a legacy session. The 2026-07-28 era has none:
// every message of its server belongs to a request.
func (h *HTTPHandler) get(w http.ResponseWriter, r *http.Request) {
	session := r.Header.Get(HeaderSession)
	if session == "" {
		w.Header().Set("Allow", "POST, DELETE")
		httpError(w, http.StatusMethodNotAllowed, jsonrpc.CodeInvalidRequest, "Method Not Allowed: only a session started by initialize has a stream to GET")
		return
	}
	if !acceptsEvents(w, r) {
		return
	}
	if _, ok := h.sessionVersion(session); !ok {
		httpError(w, http.StatusNotFound, jsonrpc.CodeInvalidRequest, "Not Found: unknown or ended session; send initialize to start a new one")
		return
	}
	if !acquire(h.streams) {
		busy(w)
		return
	}
	defer release(h.streams)
	h.mu.Lock()
	ss := h.state(session)
	if ss.stream != nil {
		h.mu.Unlock()
		httpError(w, http.StatusConflict, jsonrpc.CodeInvalidRequest, "Conflict: this session already has a stream open")
		return
	}
	st := startSSE(w)
	ss.stream = st
	h.mu.Unlock()
	defer func() {
		st.end()
		h.mu.Lock()
		if ss.stream == st {
			ss.stream = nil
		}
		h.mu.Unlock()
	}()
	h.keepOpen(r, st)
}

// keepOpen keeps a stream open, with a comment now and then, until the
// client or the server ends it.
func (h *HTTPHandler) keepOpen(r *http.Request, st *sseWriter) {
	if st.comment() != nil {
		return
	}
	t := time.NewTicker(keepAlive)
	defer t.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-h.stopping:
			return
		case <-st.broken:
			return
		case <-t.C:
			if st.comment() != nil {
				return
			}
		}
	}
}

// delete ends a session.
func (h *HTTPHandler) delete(w http.ResponseWriter, r *http.Request) {
	session := r.Header.Get(HeaderSession)
	if session == "" {
		httpError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "Bad Request: missing "+HeaderSession+" header")
		return
	}
	if _, ok := h.sessionVersion(session); !ok {
		httpError(w, http.StatusNotFound, jsonrpc.CodeInvalidRequest, "Not Found: unknown or ended session")
		return
	}
	h.end(session)
	h.endSession(session)
	w.WriteHeader(http.StatusNoContent)
}

// end records that session has ended, for the rest of its lifetime,
// forgetting the ended ids that have expired meanwhile.
func (h *HTTPHandler) end(session string) {
	exp := until(session)
	h.mu.Lock()
	h.ended[session] = exp
	if len(h.ended)%1024 == 0 {
		now := time.Now()
		for id, t := range h.ended {
			if t.Before(now) {
				delete(h.ended, id)
			}
		}
	}
	h.mu.Unlock()
	if h.opt.Ended != nil {
		if err := h.opt.Ended.Add(session, exp); err != nil {
			h.opt.Logf("http: recording the end of a session: %v", err)
		}
	}
}

// endSession stops the subscriptions of a session and ends its stream.
func (h *HTTPHandler) endSession(session string) {
	h.mu.Lock()
	ss := h.sessions[session]
	delete(h.sessions, session)
	h.mu.Unlock()
	if ss == nil {
		return
	}
	ss.subs.Stop()
	if ss.stream != nil {
		ss.stream.end()
	}
}

// endAll ends every session's subscriptions and streams, when the server
// stops.
func (h *HTTPHandler) endAll() {
	h.mu.Lock()
	sessions := make([]string, 0, len(h.sessions))
	for s := range h.sessions {
		sessions = append(sessions, s)
	}
	h.mu.Unlock()
	for _, s := range sessions {
		h.endSession(s)
	}
}
