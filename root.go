package main

import (
	"agentmail/internal/text"
	"agentmail/mailbox"
	"agentmail/tools"
	"context"
	"fmt"
	"os"
)

// service builds the shared layer for this process: the project's mailbox
// and the caller's tmux (see agentClient; e.id holds what the flags say),
// each with the reason when it is unavailable.
func (e *env) service(warnPrefix string) *tools.Service {
	svc := &tools.Service{}
	svc.Store, svc.StoreErr = e.findStore(warnPrefix)
	if c, err := osAgentClient(context.Background(), e.id); err != nil {
		svc.TermErr = err
	} else {
		svc.Term = c
	}
	return svc
}

// findStore finds the project root and returns its store, whose warnings
// go to stderr after warnPrefix.
func (e *env) findStore(warnPrefix string) (*mailbox.Store, error) {
	root, err := findRoot()
	if err != nil {
		return nil, err
	}
	st := mailbox.New(root)
	st.Warnf = func(format string, args ...any) {
		fmt.Fprintf(e.stderr, "%s%s\n", warnPrefix, text.OneLine(fmt.Sprintf(format, args...)))
	}
	return st, nil
}

func findRoot() (string, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return mailbox.FindRoot(cwd, os.Getenv)
}
