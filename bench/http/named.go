package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"agentmail/mailbox"
)

// named measures a hub of total named agents, each with its own token:
// waiting of them wait in receive all along, while active of them send to
// a random other active one and receive, one call at a time, for d, as
// the load run does with windows.
func named(srv *server, p *project, total, active, waiting int, d time.Duration) {
	if active+waiting > total {
		fatalf("-named %d: need at least %d named agents", total, active+waiting)
	}
	st := mailbox.New(p.root)
	agents := make([]*agent, total)
	for i := range agents {
		name := fmt.Sprintf("remote%04d", i)
		token, err := st.AddNamedAgent(context.Background(), name, nil)
		if err != nil {
			fatalf("adding %s: %v", name, err)
		}
		agents[i] = &agent{server: srv, name: name, own: token}
	}
	fmt.Printf("hub: %d named agents, each with its own token: %d waiting in receive (timeout_seconds 20, again and again) all along, %d sending and receiving:\n", total, waiting, active)
	srv.resources("  before")
	stop := make(chan struct{})
	var waiters sync.WaitGroup
	for _, a := range agents[active : active+waiting] {
		a.initialize()
		waiters.Add(1)
		go func() {
			defer waiters.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"w%s","method":"tools/call","params":{"name":"receive","arguments":{"timeout_seconds":20}}}`, a.name)
				if _, _, err := a.post(body); err != nil {
					return
				}
			}
		}()
	}
	// The waits are in place before the load starts.
	time.Sleep(time.Second)
	p.agents = nil
	for _, a := range agents[:active] {
		p.agents = append(p.agents, window{name: a.name})
	}
	for _, a := range agents[:active] {
		a.initialize()
	}
	loadAgents(srv, p, agents[:active], d, "named agents, one token each")
	srv.resources("  during the waits")
	close(stop)
	// A message to each waiting agent ends its wait.
	for _, a := range agents[active : active+waiting] {
		agents[0].call(toolCall("send", map[string]any{"recipient": a.name, "message": "end of the run"}))
	}
	waiters.Wait()
}
