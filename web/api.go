package web

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"agentmail/mailbox"
	"agentmail/tools"
)

// agentsView is the answer of /api/agents.
type agentsView struct {
	Person string        `json:"person"`
	Agents []tools.Agent `json:"agents"`
	// Error says why the list lacks the tmux windows (not inside tmux,
	// say), when it does.
	Error string `json:"error,omitempty"`
}

func (s *Server) agents(w http.ResponseWriter, r *http.Request) {
	v := agentsView{Person: s.opt.Person}
	svc := s.opt.Service
	list, err := svc.Agents(r.Context())
	if err != nil && svc.Term != nil {
		// Without the windows the page still shows the mail.
		v.Error = err.Error()
		list, err = (&tools.Service{Store: svc.Store, StoreErr: svc.StoreErr}).Agents(r.Context())
	}
	if err != nil {
		apiError(w, http.StatusInternalServerError, err)
		return
	}
	if svc.Term == nil && svc.TermErr != nil {
		v.Error = svc.TermErr.Error()
	}
	v.Agents = list
	writeJSON(w, v)
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := tools.MessageFilter{Agent: q.Get("agent"), Text: q.Get("q"), Cursor: q.Get("cursor")}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > tools.MaxPageSize {
			apiError(w, http.StatusBadRequest, errors.New("limit must be a number from 1 to "+strconv.Itoa(tools.MaxPageSize)))
			return
		}
		f.Limit = n
	}
	page, err := s.opt.Service.Messages(r.Context(), f)
	if errors.Is(err, tools.ErrBadCursor) {
		apiError(w, http.StatusBadRequest, err)
		return
	}
	if err != nil {
		apiError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, page)
}

// thread answers the text agentmail thread prints, as plain text: the
// page shows it as preformatted text, never as HTML.
func (s *Server) thread(w http.ResponseWriter, r *http.Request) {
	th, err := s.opt.Service.ProjectThread(r.Context(), r.URL.Query().Get("id"))
	if errors.Is(err, tools.ErrThreadNotFound) {
		apiError(w, http.StatusNotFound, err)
		return
	}
	if err != nil {
		apiError(w, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, tools.ThreadText(th))
}

// sendRequest is the body of POST /api/send: a message from the person
// to one agent or more, in the thread of reply_to when given.
type sendRequest struct {
	To      []string `json:"to"`
	Message string   `json:"message"`
	ReplyTo string   `json:"reply_to,omitempty"`
}

type sendResult struct {
	IDs  []string `json:"ids"`
	Text string   `json:"text"`
}

// maxSendBody bounds the body of a send: the largest message, escaped as
// JSON, and its recipients.
const maxSendBody = 8*mailbox.MaxMessageSize + 64<<10

func (s *Server) send(w http.ResponseWriter, r *http.Request) {
	var req sendRequest
	if !decodeJSON(w, r, &req) {
		return
	}
	svc := s.opt.Service
	ms, err := svc.SendAll(r.Context(), req.To, req.Message, req.ReplyTo)
	if err != nil {
		apiError(w, http.StatusBadRequest, err)
		return
	}
	res := sendResult{Text: tools.SentAllText(ms, svc.Waiting(r.Context(), req.To))}
	for _, m := range ms {
		res.IDs = append(res.IDs, m.ID)
	}
	writeJSON(w, res)
}

// read marks the person's unread messages of a thread read: the page
// asks for it when the person opens the thread.
func (s *Server) read(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ThreadID string `json:"thread_id"`
	}
	if !decodeJSON(w, r, &req) {
		return
	}
	n, err := s.opt.Service.MarkThreadRead(r.Context(), req.ThreadID)
	if err != nil {
		apiError(w, http.StatusBadRequest, err)
		return
	}
	writeJSON(w, map[string]int{"marked": n})
}

// decodeJSON decodes a request's JSON body into v, or answers why not.
// Only JSON is taken: a form of another site cannot send it without a
// preflight, which this server never allows.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		apiError(w, http.StatusUnsupportedMediaType, errors.New("send JSON (Content-Type: application/json)"))
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxSendBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		apiError(w, http.StatusBadRequest, errors.New("invalid request: "+err.Error()))
		return false
	}
	return true
}

// writeJSON answers v as JSON. HTML characters are escaped in it, so that
// even a browser that took it for a page would find no markup.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	json.NewEncoder(w).Encode(v)
}

func apiError(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}
