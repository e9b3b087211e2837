package mcp

import (
	"context"
	"errors"
	"strings"
	"time"

	"agentmail/internal/text"
	"agentmail/jsonrpc"
	"agentmail/tools"
)

// The resources: the caller's inbox, and its threads through a template.
// Both are Markdown views that mark nothing read.
const (
	InboxURI       = "agentmail://inbox"
	threadPrefix   = "agentmail://threads/"
	threadTemplate = threadPrefix + "{thread_id}"
	markdown       = "text/markdown"
)

// CodeResourceNotFound is the legacy era's error for a resource that does
// not exist; the modern era answers -32602 instead.
const CodeResourceNotFound = -32002

type resource struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	MimeType    string `json:"mimeType"`
}

type resourceTemplate struct {
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	MimeType    string `json:"mimeType"`
}

var inboxResource = resource{
	URI:   InboxURI,
	Name:  "inbox",
	Title: "Your inbox",
	Description: "Your mailbox as Markdown: how many messages are unread, then the newest " +
		"messages (unread first) with id, sender, time, thread and first line. Reading it marks nothing read.",
	MimeType: markdown,
}

var threadResource = resourceTemplate{
	URITemplate: threadTemplate,
	Name:        "thread",
	Title:       "A thread",
	Description: "A whole thread as Markdown, oldest message first: every message with its sender, time and body. " +
		"Only threads you sent or received a message of can be read.",
	MimeType: markdown,
}

type resourceContents struct {
	URI      string `json:"uri"`
	MimeType string `json:"mimeType"`
	Text     string `json:"text"`
}

// readResource returns the text of the resource at uri, or a not-found
// error for the era.
func (s *Server) readResource(ctx context.Context, p *params, modern bool) ([]resourceContents, error) {
	raw, err := p.member("uri")
	if err != nil {
		return nil, err
	}
	uri, ok := jsonrpc.StringValue(raw)
	if raw == nil || !ok {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "Invalid params: resources/read needs a uri string")
	}
	var body string
	switch {
	case uri == InboxURI:
		in, err := s.svc.Inbox(ctx, tools.InboxFilter{All: true})
		if err != nil {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "Internal error: %s", text.OneLine(err.Error()))
		}
		body = tools.InboxText(in)
	case strings.HasPrefix(uri, threadPrefix):
		th, err := s.svc.Thread(ctx, strings.TrimPrefix(uri, threadPrefix))
		if errors.Is(err, tools.ErrThreadNotFound) {
			return nil, notFound(uri, modern)
		}
		if err != nil {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "Internal error: %s", text.OneLine(err.Error()))
		}
		body = tools.ThreadText(th)
	default:
		return nil, notFound(uri, modern)
	}
	return []resourceContents{{URI: uri, MimeType: markdown, Text: body}}, nil
}

// notFound is the error for a resource that does not exist, or that the
// caller may not read: the two are not told apart.
func notFound(uri string, modern bool) error {
	code := CodeResourceNotFound
	if modern {
		code = jsonrpc.CodeInvalidParams
	}
	return &jsonrpc.Error{Code: code, Message: "Resource not found: " + uri, Data: map[string]string{"uri": uri}}
}

// subscribable reports whether uri may be subscribed to: the inbox only,
// since a thread changes only when mail arrives in the inbox too.
func subscribable(uri string) bool { return uri == InboxURI }

// resourceLists are the results of resources/list and
// resources/templates/list, which never change.
var (
	resourcesList  = map[string]any{"resources": []resource{inboxResource}}
	templatesList  = map[string]any{"resourceTemplates": []resourceTemplate{threadResource}}
	emptyResult    = struct{}{}
	updatedMethod  = "notifications/resources/updated"
	resourcesCache = 3600000 // ttlMs of the two lists in the modern era
)

func (s *Server) resourcesList(ctx context.Context, req *jsonrpc.Request, p *params) (any, error) {
	if err := checkNoCursor(p); err != nil {
		return nil, err
	}
	return resourcesList, nil
}

func (s *Server) templatesList(ctx context.Context, req *jsonrpc.Request, p *params) (any, error) {
	if err := checkNoCursor(p); err != nil {
		return nil, err
	}
	return templatesList, nil
}

func (s *Server) resourcesRead(ctx context.Context, req *jsonrpc.Request, p *params) (any, error) {
	contents, err := s.readResource(ctx, p, false)
	if err != nil {
		return nil, err
	}
	return map[string]any{"contents": contents}, nil
}

// subscribeURI reads the uri of resources/subscribe and unsubscribe.
func subscribeURI(p *params) (string, error) {
	raw, err := p.member("uri")
	if err != nil {
		return "", err
	}
	uri, ok := jsonrpc.StringValue(raw)
	if raw == nil || !ok {
		return "", jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "Invalid params: needs a uri string")
	}
	return uri, nil
}

// resourcesSubscribe starts sending notifications/resources/updated for
// the inbox whenever the caller's mailbox changes, until unsubscribe or
// the end of the session. Subscribing twice is harmless.
func (s *Server) resourcesSubscribe(ctx context.Context, req *jsonrpc.Request, p *params) (any, error) {
	uri, err := subscribeURI(p)
	if err != nil {
		return nil, err
	}
	if !subscribable(uri) {
		return nil, notFound(uri, false)
	}
	s.subMu.Lock()
	defer s.subMu.Unlock()
	if s.subs[uri] != nil {
		return emptyResult, nil
	}
	w, err := s.watchInbox(ctx)
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "Internal error: %s", text.OneLine(err.Error()))
	}
	stop := w.notify(func() error {
		return s.conn.Notify(updatedMethod, map[string]string{"uri": uri})
	})
	if s.subs == nil {
		s.subs = map[string]func(){}
	}
	s.subs[uri] = stop
	return emptyResult, nil
}

// resourcesUnsubscribe stops the notifications of a subscription; no
// notification for it is sent once it has returned.
func (s *Server) resourcesUnsubscribe(ctx context.Context, req *jsonrpc.Request, p *params) (any, error) {
	uri, err := subscribeURI(p)
	if err != nil {
		return nil, err
	}
	s.subMu.Lock()
	stop := s.subs[uri]
	delete(s.subs, uri)
	s.subMu.Unlock()
	if stop != nil {
		stop()
	}
	return emptyResult, nil
}

// stopSubscriptions ends every legacy subscription.
func (s *Server) stopSubscriptions() {
	s.subMu.Lock()
	subs := s.subs
	s.subs = nil
	s.subMu.Unlock()
	for _, stop := range subs {
		stop()
	}
}

// settle is how long the inbox watch lets the file events of one change
// gather before it notifies: an append is a write, then a sync to disk and
// a close, which a slow disk spreads over tens of milliseconds.
const settle = 100 * time.Millisecond

// inboxWatch watches the caller's mailbox from the moment it is made, so
// that a change between a subscription's acknowledgement and the first
// notification is not missed; notify starts the notifications.
type inboxWatch struct {
	changes <-chan struct{}
	unwatch func()
}

func (s *Server) watchInbox(ctx context.Context) (*inboxWatch, error) {
	changes, unwatch, err := s.svc.WatchInbox(context.WithoutCancel(ctx))
	if err != nil {
		return nil, err
	}
	return &inboxWatch{changes, unwatch}, nil
}

// notify calls send whenever the mailbox changes, from its own goroutine,
// until stop is called; stop waits for a send in progress, so that nothing
// is sent after it returns.
func (w *inboxWatch) notify(send func() error) (stop func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-w.changes:
			}
			// One message stored is several file events: they make one
			// notification.
			select {
			case <-quit:
				return
			case <-time.After(settle):
			}
			select {
			case <-w.changes:
			default:
			}
			if err := send(); err != nil {
				return
			}
		}
	}()
	return func() {
		close(quit)
		<-done
		w.unwatch()
	}
}
