package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"agentmail/internal/text"
	"agentmail/jsonrpc"
	"agentmail/tools"
)

const updatedMethod = "notifications/resources/updated"

// Subscriptions are the legacy resource subscriptions of one session:
// each watches the agent's mailbox and sends notifications/resources/updated
// through notify while it changes.
type Subscriptions struct {
	notify func(method string, params any) error

	mu      sync.Mutex
	stopped bool
	subs    map[string]func() // uri → stop
}

// NewSubscriptions returns the subscriptions of a session whose
// notifications go through notify.
func NewSubscriptions(notify func(method string, params any) error) *Subscriptions {
	return &Subscriptions{notify: notify, subs: map[string]func(){}}
}

// errEnded refuses a subscription in a session that has ended.
var errEnded = jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Invalid Request: the session has ended")

// Subscribe watches the mailbox of svc's agent for uri, replacing a watch
// of the same uri.
func (s *Subscriptions) Subscribe(svc *tools.Service, uri string) error {
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	if stopped {
		return errEnded
	}
	w, err := watchInbox(svc)
	if err != nil {
		return err
	}
	stop := w.notify(func() error {
		return s.notify(updatedMethod, map[string]string{"uri": uri})
	})
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		stop()
		return errEnded
	}
	old := s.subs[uri]
	s.subs[uri] = stop
	s.mu.Unlock()
	if old != nil {
		old()
	}
	return nil
}

// Unsubscribe ends the subscription of uri, if any; nothing is sent for it
// once Unsubscribe has returned.
func (s *Subscriptions) Unsubscribe(uri string) {
	s.mu.Lock()
	stop := s.subs[uri]
	delete(s.subs, uri)
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// Stop ends every subscription, and refuses new ones.
func (s *Subscriptions) Stop() {
	s.mu.Lock()
	subs := s.subs
	s.subs, s.stopped = map[string]func(){}, true
	s.mu.Unlock()
	for _, stop := range subs {
		stop()
	}
}

// settle is how long the inbox watch lets the file events of one change
// gather before it notifies: an append is a write, then a sync to disk and
// a close, which a slow disk spreads over tens of milliseconds.
const settle = 100 * time.Millisecond

// inboxWatch watches a mailbox from the moment it is made, so that a
// change between a subscription's acknowledgement and the first
// notification is not missed; notify starts the notifications.
type inboxWatch struct {
	changes <-chan struct{}
	unwatch func()
}

func watchInbox(svc *tools.Service) (*inboxWatch, error) {
	changes, unwatch, err := svc.WatchInbox(context.Background())
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "Internal error: %s", text.OneLine(err.Error()))
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
		for w.next(quit) {
			if send() != nil {
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

// next waits for the next change, letting the events of one change
// gather into one, and reports false once quit is closed.
func (w *inboxWatch) next(quit <-chan struct{}) bool {
	select {
	case <-quit:
		return false
	case <-w.changes:
	}
	select {
	case <-quit:
		return false
	case <-time.After(settle):
	}
	select {
	case <-w.changes:
	default:
	}
	return true
}

// listen answers subscriptions/listen. Of the notification types a client
// may ask for, the server honours resource subscriptions to the inbox (the
// tool and resource lists never change, and there are no prompts): the
// acknowledgement lists what it honours, each later notification carries
// the subscription id, and the request stays open beside the others. A
// client that cancels it gets nothing more for it, not even an answer;
// when the connection stops reading it ends with its result.
func (ss *session) listen(ctx context.Context, r *request) (any, error) {
	raw := r.p.members["notifications"]
	if len(raw) == 0 || raw[0] != '{' {
		return nil, invalidParams("subscriptions/listen needs a notifications object")
	}
	var asked struct {
		ResourceSubscriptions []string `json:"resourceSubscriptions"`
	}
	if err := json.Unmarshal(raw, &asked); err != nil {
		return nil, invalidParams("notifications.resourceSubscriptions must be an array of URIs")
	}
	honoured := map[string]any{}
	var w *inboxWatch
	if slices.ContainsFunc(asked.ResourceSubscriptions, subscribable) {
		honoured["resourceSubscriptions"] = []string{InboxURI}
		// The watch starts before the acknowledgement, so that mail
		// stored right after it is announced.
		svc, err := serviceOf(ctx)
		if err != nil {
			return nil, err
		}
		if w, err = watchInbox(svc); err != nil {
			return nil, err
		}
	}
	// The subscription id is the request's id, with its JSON type.
	meta := map[string]any{MetaSubscriptionID: r.ID}
	ack := map[string]any{"notifications": honoured, "_meta": meta}
	if err := ss.conn.Notify("notifications/subscriptions/acknowledged", ack); err != nil {
		if w != nil {
			w.unwatch()
		}
		return nil, fmt.Errorf("acknowledging subscriptions/listen: %w", err)
	}
	go ss.stream(ctx, r, w, meta)
	return nil, jsonrpc.ErrAsync
}

// stream sends a listen's notifications until it is cancelled or the
// connection stops reading, and then its result.
func (ss *session) stream(ctx context.Context, r *request, w *inboxWatch, meta map[string]any) {
	if w != nil {
		stop := w.notify(func() error {
			if ctx.Err() != nil {
				return ctx.Err() // cancelled: nothing more for this stream
			}
			return ss.conn.Notify(updatedMethod, map[string]any{"uri": InboxURI, "_meta": meta})
		})
		defer stop()
	}
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), jsonrpc.ErrStopping) {
		return
	}
	end := ss.srv.complete()
	end.Meta[MetaSubscriptionID] = r.ID
	ss.conn.Respond(r.Request, end, nil)
}
