// Package web serves the page of the person who runs the agents
// (agentmail web): the project's agents, every message between them, live,
// their threads, and a form to write as the person. The page is plain
// HTML, CSS and one small script, embedded; the API under /api/ answers
// JSON, and /api/events tells the page when to look again.
package web

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync"

	"agentmail/tools"
)

//go:embed static
var static embed.FS

// Options configure a Server.
type Options struct {
	// Service runs the operations as the person (see tools.AsPerson).
	Service *tools.Service
	// Person is the person's address.
	Person string
	// Addr is the address the server listens on, "host:port": a request
	// must name it as its Host.
	Addr string
	// Host is the name the server was asked to listen on (--host), which
	// a request may name too, with Addr's port: a name of the machine
	// that the person chose.
	Host string
	// TLS says whether the listener speaks TLS, for the Origin a page of
	// this server sends and the cookie's Secure flag.
	TLS bool
	// Logf reports what goes wrong outside a request; nil discards it.
	Logf func(format string, args ...any)
}

// Server is the page and its API.
type Server struct {
	opt  Options
	hub  *hub
	mux  *http.ServeMux
	mu   sync.Mutex
	code string          // the one-time code of the address printed; "" once used
	keys map[string]bool // sha256 of the session tokens given out
}

// CookieName is the name of the cookie that holds the session token.
const CookieName = "agentmail_session"

// New returns a Server with a new one-time code, which Code returns. The
// live updates start with Start.
func New(opt Options) (*Server, error) {
	if opt.Logf == nil {
		opt.Logf = func(string, ...any) {}
	}
	s := &Server{opt: opt, code: randomHex(16), keys: map[string]bool{}}
	s.hub = newHub(opt.Service.Store, opt.Logf)
	if err := s.routes(); err != nil {
		return nil, err
	}
	return s, nil
}

// Code returns the one-time code that the address printed at start
// carries, "" once it has been used.
func (s *Server) Code() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.code
}

// URL is the address to open in a browser: the page, with the code.
func (s *Server) URL() string {
	scheme := "http"
	if s.opt.TLS {
		scheme = "https"
	}
	return scheme + "://" + s.opt.Addr + "/?code=" + s.Code()
}

// Start watches the mailbox for the live updates until Close.
func (s *Server) Start() error { return s.hub.start() }

// Close ends the live updates: each open event stream ends.
func (s *Server) Close() { s.hub.close() }

func (s *Server) routes() error {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		return err
	}
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, sub, "index.html")
	})
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(sub)))
	m.HandleFunc("GET /api/agents", s.agents)
	m.HandleFunc("GET /api/messages", s.messages)
	m.HandleFunc("GET /api/thread", s.thread)
	m.HandleFunc("POST /api/send", s.send)
	m.HandleFunc("POST /api/read", s.read)
	m.HandleFunc("GET /api/events", s.events)
	s.mux = m
	return nil
}

// ServeHTTP checks every request (Host, Origin, then the session cookie
// or the one-time code) before it is served, and gives every answer the
// headers that keep a browser from running anything but the page's own
// script.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	if !s.hostAllowed(r.Host) {
		http.Error(w, "Forbidden: host "+r.Host+" is not served here", http.StatusForbidden)
		return
	}
	if !s.originAllowed(r) {
		http.Error(w, "Forbidden: requests from another origin are refused", http.StatusForbidden)
		return
	}
	if r.URL.Path == "/" && r.URL.Query().Has("code") {
		s.login(w, r)
		return
	}
	if !s.authorized(r) {
		http.Error(w, "Unauthorized: open the address agentmail web printed, with its code", http.StatusUnauthorized)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// CSP is the Content-Security-Policy of every answer: the page's own
// script and style only, nothing inline, no frames, no other connection.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// hostAllowed reports whether hostport, a request's Host, names the
// address the server listens on, with its port: the address itself, the
// name given as --host, on a loopback address localhost or another
// loopback literal, and on every interface (0.0.0.0) any address
// literal. Any other name, one that only DNS gives (the rebinding
// attack), is refused.
func (s *Server) hostAllowed(hostport string) bool {
	if strings.EqualFold(hostport, s.opt.Addr) {
		return true
	}
	host, port, err := net.SplitHostPort(hostport)
	bhost, bport, berr := net.SplitHostPort(s.opt.Addr)
	if err != nil || berr != nil || port != bport {
		return false
	}
	bound := net.ParseIP(bhost)
	switch {
	case s.opt.Host != "" && strings.EqualFold(host, strings.Trim(s.opt.Host, "[]")):
		return true
	case isLoopback(bhost):
		return strings.EqualFold(host, "localhost") || isLoopback(host)
	case bound != nil && bound.IsUnspecified():
		return net.ParseIP(strings.Trim(host, "[]")) != nil
	}
	return false
}

func isLoopback(host string) bool {
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// originAllowed reports whether the request comes from the page itself:
// its Origin, when sent, is this server's. A request that changes
// something must send one: browsers do for every POST.
func (s *Server) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return r.Method == http.MethodGet || r.Method == http.MethodHead
	}
	scheme := "http://"
	if s.opt.TLS {
		scheme = "https://"
	}
	return strings.EqualFold(origin, scheme+r.Host)
}

// login turns the one-time code into a session cookie and sends the
// browser to the page without the code, which is then used up: an
// address that leaked from the terminal's scrollback after the person
// opened it lets nobody in.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	got := r.URL.Query().Get("code")
	s.mu.Lock()
	ok := s.code != "" && equal(got, s.code)
	var token string
	if ok {
		s.code = ""
		token = randomHex(32)
		s.keys[hash(token)] = true
	}
	s.mu.Unlock()
	if !ok {
		http.Error(w, "Unauthorized: this code is wrong or was used already; restart agentmail web for a new one", http.StatusUnauthorized)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: token, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.opt.TLS})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// authorized reports whether the request carries a session cookie this
// server gave out. Tokens are kept hashed and looked up by hash, so the
// lookup's timing tells nothing of a token.
func (s *Server) authorized(r *http.Request) bool {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[hash(c.Value)]
}

func equal(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(errors.New("crypto/rand failed: " + err.Error()))
	}
	return hex.EncodeToString(b)
}
