package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"agentmail/internal/text"
	"agentmail/mailbox"
	"agentmail/tools"
	"agentmail/web"
)

var webCmd = &command{
	summary: "Serve a live web page of the agents' mail for the person running them",
	usage:   "agentmail web [--port N] [--host H] [--as NAME] [--open] [--tls-cert FILE --tls-key FILE]",
	help: `Serve one page that shows the agents of your tmux session, every message
between them as it arrives, and their threads, and lets you write to them.
It prints its address on stderr with a one-time code: opening it sets a
session cookie, and every other request without that cookie is refused.

You get an address of your own, "human" unless --as says otherwise: it is
listed in .agentmail/people, agents see it in their recipients as
"human [person]" and can write to it, and the page shows its inbox.

Flags:
  --port N          port to listen on (default: a free one)
  --host H          address to listen on (default 127.0.0.1); any other than
                    a loopback address needs --tls-cert and --tls-key
  --as NAME         your address (default human)
  --open            open the page in the desktop's browser
  --tls-cert FILE   serve HTTPS with this certificate (PEM)
  --tls-key FILE    and this key (PEM)

It runs until interrupted (Ctrl-C, SIGTERM). See docs/web.md.`,
	run: runWeb,
}

type webOptions struct {
	port            int
	host, as        string
	open            bool
	tlsCert, tlsKey string
}

func parseWebFlags(e *env, args []string) (*webOptions, error) {
	o := &webOptions{}
	fs := newFlags("web")
	fs.IntVar(&o.port, "port", 0, "")
	fs.StringVar(&o.host, "host", "127.0.0.1", "")
	fs.StringVar(&o.as, "as", "human", "")
	fs.BoolVar(&o.open, "open", false, "")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "")
	fs.StringVar(&o.tlsKey, "tls-key", "", "")
	e.id.flags(fs)
	if err := noArgs(fs, args); err != nil {
		return nil, err
	}
	switch {
	case o.port < 0 || o.port > 65535:
		return nil, usagef("invalid port %d: use 0 to 65535 (0 picks a free one)", o.port)
	case (o.tlsCert == "") != (o.tlsKey == ""):
		return nil, usagef("--tls-cert and --tls-key go together")
	case !isLoopback(o.host) && o.tlsCert == "":
		return nil, usagef("--host %s is not a loopback address: give --tls-cert and --tls-key, since the page shows every agent's mail", o.host)
	}
	if err := mailbox.ValidName(o.as); err != nil {
		return nil, usagef("invalid --as %q: %v", o.as, err)
	}
	return o, nil
}

func runWeb(ctx context.Context, e *env, args []string) error {
	o, err := parseWebFlags(e, args)
	if err != nil {
		return err
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(e.stderr, "agentmail web: %s\n", text.OneLine(fmt.Sprintf(format, args...)))
	}
	svc, err := personService(ctx, e, o.as, logf)
	if err != nil {
		return err
	}
	ln, scheme, err := webListen(o)
	if err != nil {
		return err
	}
	defer ln.Close()
	srv, err := web.New(web.Options{Service: svc, Person: o.as, Addr: ln.Addr().String(), Host: o.host, TLS: scheme == "https", Logf: logf})
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	defer srv.Close()
	logf("serving the page of %s at %s", o.as, srv.URL())
	if o.open {
		openBrowser(srv.URL(), logf)
	}
	return serveWeb(ctx, ln, srv)
}

// personService is the shared layer as the person named name, who
// watches the agents of the caller's tmux session. Outside tmux the page
// still shows the mail, and says why it cannot list the windows or send.
// name is added to the people's addresses, so that agents can write to it.
func personService(ctx context.Context, e *env, name string, logf func(string, ...any)) (*tools.Service, error) {
	base := e.service("agentmail web: warning: ")
	st, err := base.Store, base.StoreErr
	if err != nil {
		return nil, err
	}
	svc := &tools.Service{Store: st, TermErr: base.TermErr}
	if base.Term != nil {
		sess, err := base.Term.Session(ctx)
		if err != nil {
			return nil, err
		}
		for _, w := range sess.Windows {
			if mailbox.SameMailbox(w.Name, name) {
				// The two would share one mailbox.
				return nil, fmt.Errorf("a window of this tmux session is named %q: choose another address with --as", w.Name)
			}
		}
		svc.Term = tools.AsPerson(base.Term, name)
	} else {
		logf("warning: %v: the page shows the mail, but no windows, and cannot send", base.TermErr)
	}
	named, err := st.NamedAgents(ctx)
	if err != nil {
		return nil, err
	}
	for _, a := range named {
		if mailbox.SameMailbox(a.Name, name) {
			return nil, fmt.Errorf("%q is a named agent (agentmail agent list): choose another address with --as", a.Name)
		}
	}
	if err := st.AddPerson(name); err != nil {
		return nil, fmt.Errorf("adding %s to the people's addresses: %w", name, err)
	}
	return svc, nil
}

// webListen listens where the flags say, with TLS when they give a
// certificate.
func webListen(o *webOptions) (net.Listener, string, error) {
	ln, err := net.Listen("tcp", listenAddr(o.host, o.port))
	if err != nil {
		return nil, "", err
	}
	if o.tlsCert == "" {
		return ln, "http", nil
	}
	cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
	if err != nil {
		ln.Close()
		return nil, "", err
	}
	return tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}), "https", nil
}

// serveWeb serves until ctx ends or the process is asked to stop, then
// gives requests a moment to finish. Event streams end at once.
func serveWeb(ctx context.Context, ln net.Listener, srv *web.Server) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	srv.Close()
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// openBrowser starts the desktop's browser on url, where there is one; a
// failure is only reported, since the address is printed anyway.
func openBrowser(url string, logf func(string, ...any)) {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	cmd := exec.Command(name, url)
	if err := cmd.Start(); err != nil {
		logf("warning: could not open a browser (%v): open the address above", err)
		return
	}
	go cmd.Wait()
}
