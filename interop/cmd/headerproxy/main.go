// Command headerproxy forwards HTTP on a loopback port to an agentmail
// HTTP server, adding headers to every request that lacks them. It lets a
// client that cannot send headers of its own, such as the MCP conformance
// suite, speak to the server as one agent without the server giving
// anybody a default agent.
//
// Usage:
//
//	headerproxy -target http://127.0.0.1:PORT -H 'Agentmail-Pane: %1'
//
// It prints the URL it listens at (http://127.0.0.1:PORT) on standard
// output, then serves until it is sent SIGTERM or SIGINT.
//
// Everything but the added headers passes through unchanged, the Host and
// Origin headers included, so that the server's own checks (DNS
// rebinding, origins) answer the client; event streams are flushed as
// each event arrives.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// headers collects the repeated -H flags.
type headers http.Header

func (h headers) String() string { return "" }

func (h headers) Set(v string) error {
	name, value, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("want \"Name: value\", got %q", v)
	}
	http.Header(h).Add(strings.TrimSpace(name), strings.TrimSpace(value))
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "headerproxy:", err)
		os.Exit(1)
	}
}

func run() error {
	add := headers{}
	target := flag.String("target", "", "the server's base URL, http://host:port")
	flag.Var(add, "H", "a header to add, \"Name: value\" (repeatable)")
	flag.Parse()
	u, err := url.Parse(*target)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("-target must be an http://host:port URL, got %q", *target)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = u.Scheme
			pr.Out.URL.Host = u.Host
			// The client's Host reaches the server as sent: a foreign one
			// must be refused by the server, not hidden by the proxy.
			pr.Out.Host = pr.In.Host
			for name, values := range add {
				if pr.Out.Header.Get(name) == "" {
					pr.Out.Header[name] = values
				}
			}
		},
		// An event stream must reach the client as it is written.
		FlushInterval: -1,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("http://%s\n", ln.Addr())
	srv := &http.Server{Handler: proxy}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
