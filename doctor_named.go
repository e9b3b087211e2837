package main

import (
	"context"
	"fmt"
	"strings"

	"agentmail/mailbox"
)

// namedCheck reports the named agents (agentmail agent), and any window of
// the session that has taken one's name since it was added: the two would
// read one mailbox, and the mailman never rings such a window.
func (d *doctor) namedCheck(ctx context.Context) check {
	const name = "named agents"
	if d.st == nil {
		return info(name, "not checked: no project", "")
	}
	list, err := d.st.NamedAgents(ctx)
	if err != nil {
		return problem(name, err.Error(), "")
	}
	if len(list) == 0 {
		return ok(name, "none (agentmail agent add NAME adds one for an agent on another machine)")
	}
	var clashes []string
	if d.sess != nil {
		for _, a := range list {
			for _, w := range d.sess.Windows {
				if mailbox.SameMailbox(w.Name, a.Name) {
					clashes = append(clashes, fmt.Sprintf("window %s is named %q, like the named agent %q", w.ID, w.Name, a.Name))
				}
			}
		}
	}
	if len(clashes) > 0 {
		return problem(name, strings.Join(clashes, "; ")+": they would read one mailbox, and the mailman never rings that window",
			"rename the window (tmux rename-window), or remove the named agent (agentmail agent remove NAME)")
	}
	return ok(name, fmt.Sprintf("%d, each with a token of its own; no window has one's name", len(list)))
}
