package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"

	"agentmail/internal/text"
	"agentmail/jsonrpc"
	"agentmail/tools"
)

// The resources: the caller's inbox, and its threads through a template.
// Both are Markdown views that mark nothing read.
const (
	InboxURI       = "agentmail://inbox"
	SentURI        = "agentmail://sent"
	threadPrefix   = "agentmail://threads/"
	threadTemplate = threadPrefix + "{thread_id}"
	markdown       = "text/markdown"
)

// CodeResourceNotFound is the legacy era's error for a resource that does
// not exist; the modern era answers -32602 instead.
const CodeResourceNotFound = -32002

type resource struct {
	URI         string `json:"uri,omitempty"`
	URITemplate string `json:"uriTemplate,omitempty"`
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

var sentResource = resource{
	URI:   SentURI,
	Name:  "sent",
	Title: "Your sent messages",
	Description: "The messages you sent, newest first, as Markdown: recipient, time, first line and how far each got: " +
		"stored, notified (a wake reached the recipient) or read, with the times.",
	MimeType: markdown,
}

var threadResource = resource{
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

// The results of the resources methods; modernFields only in the modern era.
type (
	resourcesResult struct {
		Resources []resource `json:"resources"`
		*modernFields
	}
	templatesResult struct {
		ResourceTemplates []resource `json:"resourceTemplates"`
		*modernFields
	}
	readResult struct {
		Contents []resourceContents `json:"contents"`
		*modernFields
	}
)

// private returns the modern members of a result about the caller's own
// resources, which a client may keep for ttl milliseconds but not share.
func (ss *session) private(r *request, ttl int) *modernFields {
	if !r.modern {
		return nil
	}
	return ss.srv.cacheable(ttl, "private")
}

func (ss *session) resourcesList(ctx context.Context, r *request) (any, error) {
	if err := checkNoCursor(r.p); err != nil {
		return nil, err
	}
	return resourcesResult{[]resource{inboxResource, sentResource}, ss.private(r, cacheTTLMs)}, nil
}

func (ss *session) templatesList(ctx context.Context, r *request) (any, error) {
	if err := checkNoCursor(r.p); err != nil {
		return nil, err
	}
	return templatesResult{[]resource{threadResource}, ss.private(r, cacheTTLMs)}, nil
}

// resourcesRead reads the inbox or a thread; the inbox changes with every
// message, so a modern client may not keep it.
func (ss *session) resourcesRead(ctx context.Context, r *request) (any, error) {
	uri, ok, err := r.p.str("uri", "resources/read needs a uri string")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, invalidParams("resources/read needs a uri string")
	}
	svc, err := serviceOf(ctx)
	if err != nil {
		return nil, err
	}
	body, mimeType, err := readView(ctx, svc, uri)
	switch {
	case errors.Is(err, errNotFound):
		return nil, notFound(uri, r.modern)
	case err != nil:
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "Internal error: %s", text.OneLine(err.Error()))
	}
	return readResult{[]resourceContents{{URI: uri, MimeType: mimeType, Text: body}}, ss.private(r, 0)}, nil
}

// readView returns the resource at uri and its type. The inbox and the
// sent view also take a query, which is what the CLI sends a hub for its
// flags: inbox "all" (true or false; true without it) and "from", sent
// "to" and "limit", and for both "format=json", which gives the view as
// the CLI's --json prints it. A query it does not know is not found, so
// that a client can tell a hub that lacks it.
func readView(ctx context.Context, svc *tools.Service, uri string) (body, mimeType string, err error) {
	base, rawQuery, ok := strings.Cut(uri, "?")
	if !ok || base != InboxURI && base != SentURI {
		body, err = readResource(ctx, svc, uri)
		return body, markdown, err
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return "", "", errNotFound
	}
	asJSON := false
	switch f := q["format"]; {
	case len(f) > 1 || len(f) == 1 && f[0] != "json" && f[0] != "markdown":
		return "", "", errNotFound
	case len(f) == 1:
		asJSON = f[0] == "json"
	}
	var view any
	var txt string
	if base == InboxURI {
		view, txt, err = inboxView(ctx, svc, q)
	} else {
		view, txt, err = sentView(ctx, svc, q)
	}
	if err != nil || !asJSON {
		return txt, markdown, err
	}
	b, err := json.Marshal(view)
	return string(b), "application/json", err
}

// inboxView reads the inbox with the filter of query q.
func inboxView(ctx context.Context, svc *tools.Service, q url.Values) (any, string, error) {
	filter := tools.InboxFilter{All: true}
	for k, v := range q {
		switch {
		case len(v) != 1:
			return nil, "", errNotFound
		case k == "all":
			all, err := strconv.ParseBool(v[0])
			if err != nil {
				return nil, "", errNotFound
			}
			filter.All = all
		case k == "from":
			filter.From = v[0]
		case k != "format":
			return nil, "", errNotFound
		}
	}
	in, err := svc.Inbox(ctx, filter)
	return in, tools.InboxText(in), err
}

// sentView reads the sent view with the filter of query q.
func sentView(ctx context.Context, svc *tools.Service, q url.Values) (any, string, error) {
	var filter tools.SentFilter
	for k, v := range q {
		switch {
		case len(v) != 1:
			return nil, "", errNotFound
		case k == "limit":
			n, err := strconv.Atoi(v[0])
			if err != nil || n < 1 {
				return nil, "", errNotFound
			}
			filter.Limit = n
		case k == "to":
			filter.To = v[0]
		case k != "format":
			return nil, "", errNotFound
		}
	}
	v, err := svc.Sent(ctx, filter)
	return v, tools.SentViewText(v), err
}

var errNotFound = errors.New("resource not found")

// readResource returns the text of the resource at uri.
func readResource(ctx context.Context, svc *tools.Service, uri string) (string, error) {
	switch {
	case uri == InboxURI:
		in, err := svc.Inbox(ctx, tools.InboxFilter{All: true})
		if err != nil {
			return "", err
		}
		return tools.InboxText(in), nil
	case uri == SentURI:
		v, err := svc.Sent(ctx, tools.SentFilter{})
		if err != nil {
			return "", err
		}
		return tools.SentViewText(v), nil
	case strings.HasPrefix(uri, threadPrefix):
		th, err := svc.Thread(ctx, strings.TrimPrefix(uri, threadPrefix))
		if errors.Is(err, tools.ErrThreadNotFound) {
			return "", errNotFound
		}
		if err != nil {
			return "", err
		}
		return tools.ThreadText(th), nil
	}
	return "", errNotFound
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

// subscribeURI reads the uri of resources/subscribe and unsubscribe.
func subscribeURI(p *params) (string, error) {
	uri, ok, err := p.str("uri", "needs a uri string")
	if err == nil && !ok {
		err = invalidParams("needs a uri string")
	}
	return uri, err
}

// resourcesSubscribe starts notifications/resources/updated for the inbox
// whenever the caller's mailbox changes, until unsubscribe or the end of
// the session. Subscribing again replaces the watch, for the agent named
// now.
func (ss *session) resourcesSubscribe(ctx context.Context, r *request) (any, error) {
	uri, err := subscribeURI(r.p)
	if err != nil {
		return nil, err
	}
	if !subscribable(uri) {
		return nil, notFound(uri, false)
	}
	svc, err := serviceOf(ctx)
	if err != nil {
		return nil, err
	}
	if err := ss.subs.Subscribe(svc, uri); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// resourcesUnsubscribe stops the notifications of a subscription; none is
// sent for it once it has returned.
func (ss *session) resourcesUnsubscribe(ctx context.Context, r *request) (any, error) {
	uri, err := subscribeURI(r.p)
	if err != nil {
		return nil, err
	}
	ss.subs.Unsubscribe(uri)
	return struct{}{}, nil
}
