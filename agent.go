package main

import (
	"context"
	"fmt"
	"slices"

	"agentmail/mailbox"
)

var agentCmd = &command{
	summary: "Add, list or remove named agents, which reach the project over HTTP",
	usage:   "agentmail agent add NAME | agent list | agent remove NAME",
	help: `A named agent is an agent that is no window of this tmux session: one in
a container, on another machine, in a CI job. It reaches this project's
HTTP server (agentmail mcp --transport http) with a token of its own, and
acts as that agent and nobody else: it cannot name another agent in its
headers. Its mail is kept here, like a window's.

  agentmail agent add NAME     add NAME and print its token, once, alone on
                               a line; only a hash of it is kept
                               (.agentmail/agents.jsonl, mode 0600)
  agentmail agent list         the named agents, with when each was added
  agentmail agent remove NAME  refuse NAME's token from now on; its mail
                               stays

NAME follows the rules of a window name. A name that a window of this
session or a person's address (agentmail web) has is refused. Recipients
lists a named agent as "NAME [remote]"; the mailman never types for it
(it has no pane): it learns of mail through watch --hook or a waiting
receive. docs/remote.md says how to set one up.`,
	run: func(ctx context.Context, e *env, args []string) error {
		fs := newFlags("agent")
		if err := fs.Parse(args); err != nil {
			return err
		}
		args = fs.Args()
		if len(args) == 0 {
			return usagef("agent needs add NAME, list or remove NAME")
		}
		st, err := e.findStore("warning: ")
		if err != nil {
			return err
		}
		switch {
		case args[0] == "add" && len(args) == 2:
			return addAgent(ctx, e, st, args[1])
		case args[0] == "remove" && len(args) == 2:
			if err := st.RemoveNamedAgent(ctx, args[1]); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "Removed %s: its token is refused from now on; its mail stays.\n", args[1])
			return nil
		case args[0] == "list" && len(args) == 1:
			return listAgents(ctx, e, st)
		case args[0] == "add" || args[0] == "remove":
			return usagef("agent %s needs one NAME", args[0])
		case args[0] == "list":
			return usagef("agent list takes no arguments")
		}
		return usagef("unknown agent command %q: use add, list or remove", args[0])
	},
}

// addAgent adds the named agent name and prints its token. The name may
// be no window's of the caller's session, when the caller is in tmux, and
// no person's.
func addAgent(ctx context.Context, e *env, st *mailbox.Store, name string) error {
	var windows []string
	if c, err := osAgentClient(ctx, e.id); err == nil {
		sess, err := c.Session(ctx)
		if err != nil {
			return err
		}
		for _, w := range sess.Windows {
			windows = append(windows, w.Name)
		}
	}
	people, err := st.People()
	if err != nil {
		return err
	}
	taken := func(name string) error {
		if i := slices.IndexFunc(windows, func(w string) bool { return mailbox.SameMailbox(w, name) }); i >= 0 {
			return fmt.Errorf("a window of this tmux session is named %q: a named agent needs a name of its own", windows[i])
		}
		if i := slices.IndexFunc(people, func(p string) bool { return mailbox.SameMailbox(p, name) }); i >= 0 {
			return fmt.Errorf("%q is a person's address (agentmail web): a named agent needs a name of its own", people[i])
		}
		return nil
	}
	token, err := st.AddNamedAgent(ctx, name, taken)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "Added %s. Its token follows, shown this once: give it to the agent as AGENTMAIL_TOKEN (docs/remote.md).\n", name)
	fmt.Fprintln(e.stdout, token)
	return nil
}

// listAgents prints the named agents, one a line.
func listAgents(ctx context.Context, e *env, st *mailbox.Store) error {
	list, err := st.NamedAgents(ctx)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(e.stdout, "No named agents (agentmail agent add NAME adds one)")
		return nil
	}
	for _, a := range list {
		fmt.Fprintf(e.stdout, "%s [remote], added %s\n", a.Name, a.AddedAt.UTC().Format("2006-01-02 15:04 UTC"))
	}
	return nil
}
