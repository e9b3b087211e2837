package mcp_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"agentmail/mcp"
	"agentmail/tools"
)

// Clients that send part of a body and then nothing hold no connection
// past the body wait: those without the token are answered 401 at once,
// without their body being read, and those with it get 400 when the wait
// is over; either way the server closes the connection. An honest client
// is served meanwhile.
func TestHTTPStalledBodies(t *testing.T) {
	const stalled = 1000
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := mcp.NewHTTPHandler(mcp.HTTPOptions{Version: "test", Host: "127.0.0.1", Token: "secret", BodyWait: time.Second,
		Resolve: func(context.Context, mcp.Identity) (*tools.Service, error) { return &tools.Service{}, nil }})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- h.Serve(ctx, ln, "/mcp") }()
	defer func() {
		cancel()
		<-served
	}()
	addr := ln.Addr().String()

	var wg sync.WaitGroup
	errs := make(chan error, stalled)
	start := time.Now()
	for i := range stalled {
		auth := ""
		if i%2 == 0 {
			auth = "Authorization: Bearer secret\r\n"
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\n%sContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":", addr, auth)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The server must answer and close; the client never sends more.
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
			if _, err := io.Copy(io.Discard, c); err != nil {
				errs <- fmt.Errorf("a stalled connection was not closed: %v", err)
			}
		}()
	}

	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`
	req, _ := http.NewRequest("POST", "http://"+addr+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer secret")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderAgent, "alice")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("an honest initialize beside %d stalled connections: %v", stalled, err)
	}
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(line, `"protocolVersion"`) {
		t.Errorf("honest initialize: status %d: %s", resp.StatusCode, line)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d stalled connections closed in %v", stalled, time.Since(start).Round(time.Millisecond))
}
