package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"agentmail/mailbox"
	"agentmail/mailman"
	"agentmail/tmux"
	"agentmail/tools"
)

// tmuxCheck finds the tmux that every other command runs, as they do: by
// name on PATH.
func (d *doctor) tmuxCheck(ctx context.Context) check {
	path, err := exec.LookPath("tmux")
	if err != nil {
		return problem("tmux", "tmux not found on PATH", "install tmux, or add its directory to PATH")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "-V").Output()
	if err != nil {
		return problem("tmux", fmt.Sprintf("%s -V failed: %v", path, err), "reinstall tmux")
	}
	return ok("tmux", fmt.Sprintf("%s (%s)", strings.TrimSpace(string(out)), path))
}

// agentCheck asks tmux who this is, exactly as send and receive do.
func (d *doctor) agentCheck(ctx context.Context) check {
	const fix = "run agentmail in a shell of a tmux window, where $TMUX and $TMUX_PANE are set; an assistant must pass both to its MCP server, or name the agent (--agent, $AGENTMAIL_AGENT) and the tmux socket (--tmux-socket, $AGENTMAIL_TMUX_SOCKET)"
	if d.svc.Term == nil {
		err := d.svc.TermErr
		if err == nil {
			err = tmux.ErrNotInTmux
		}
		return problem("agent", err.Error(), fix)
	}
	sess, err := d.svc.Term.Session(ctx)
	if err != nil {
		if tools.NotInTmux(err) {
			return problem("agent", err.Error(), "$TMUX_PANE names a pane that is gone (a shell left over from an earlier tmux?): "+fix)
		}
		return problem("agent", err.Error(), "")
	}
	if err := mailbox.ValidName(sess.Self.Name); err != nil {
		return problem("agent", fmt.Sprintf("window name %q cannot be an agent's address: %v", sess.Self.Name, err),
			"tmux rename-window -t "+sess.Self.ID+" NAME")
	}
	d.sess = sess
	detail := fmt.Sprintf("%q (pane %s, window %s", sess.Self.Name, sess.Self.Pane, sess.Self.ID)
	switch {
	case d.id.agent != "":
		detail += ", named by --agent"
	case os.Getenv(agentEnv) != "":
		detail += ", named by $" + agentEnv
	}
	switch {
	case d.id.socket != "":
		detail += ", tmux socket " + d.id.socket + " from --tmux-socket"
	case os.Getenv(socketEnv) != "":
		detail += ", tmux socket " + os.Getenv(socketEnv) + " from $" + socketEnv
	}
	return ok("agent", detail+")")
}

// rootCheck reports the root every command uses, and how it was found.
func (d *doctor) rootCheck() check {
	if d.svc.Store == nil {
		err := d.svc.StoreErr
		if err == nil {
			err = errors.New("no project root")
		}
		fix := "run inside a git repository, or set " + mailbox.RootEnv + " to the absolute path of the project"
		if os.Getenv(mailbox.RootEnv) != "" {
			fix = "set " + mailbox.RootEnv + " to the absolute path of an existing directory, or unset it"
		}
		return problem("root", err.Error(), fix)
	}
	d.st = d.svc.Store
	root := d.st.Root
	if os.Getenv(mailbox.RootEnv) == "" {
		return ok("root", root+" (it holds .git)")
	}
	detail := root + " (from $" + mailbox.RootEnv + ")"
	// A hook or MCP server started without the variable finds the root by
	// .git instead: worth saying when that is another directory.
	if cwd, err := os.Getwd(); err == nil {
		if git, err := mailbox.FindRoot(cwd, func(string) string { return "" }); err == nil && git != root {
			detail += "; without it, .git would make it " + git + ": every hook and MCP server must have it too"
		}
	}
	return ok("root", detail)
}

// permissionsCheck checks .agentmail and everything in it: mail is
// private (0700, 0600) and must be readable and writable by this user.
func (d *doctor) permissionsCheck() check {
	const name = "permissions"
	if d.st == nil {
		return info(name, "not checked: no project root", "")
	}
	dir := d.st.Dir()
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if !writable(d.st.Root) {
			return problem(name, d.st.Root+" is not writable, so .agentmail cannot be created there", "make the root writable for you")
		}
		return ok(name, ".agentmail does not exist yet; the first send or status creates it")
	}
	if err != nil {
		return problem(name, err.Error(), "")
	}
	if !fi.IsDir() {
		return problem(name, dir+" is not a directory", "remove "+dir)
	}
	var a permAudit
	a.look(".agentmail", fi)
	if !writable(dir) {
		a.locked = true
		a.issues = append(a.issues, ".agentmail is not writable by you")
	}
	a.walk(d.st.Root, dir)
	if len(a.issues) == 0 {
		return ok(name, ".agentmail is 0700 and its files 0600, all yours")
	}
	return problem(name, a.detail(), a.fix(dir))
}

// A permAudit gathers what is wrong with .agentmail and its files, and of
// which kinds, since each kind has its own fix.
type permAudit struct {
	issues  []string
	wide    bool // readable or writable by others: chmod
	locked  bool // not readable or writable by this user: chmod
	foreign bool // owned by another user: chown
	odd     bool // neither a directory nor a regular file: remove
	linked  bool // a file with another hard link: remove
}

// look checks one file or directory, named rel in the report.
func (a *permAudit) look(rel string, fi fs.FileInfo) {
	mode := fi.Mode()
	want := fs.FileMode(0o600)
	switch {
	case mode.IsDir():
		want = 0o700
	case mode&fs.ModeSymlink != 0:
		a.odd = true
		a.issues = append(a.issues, rel+" is a symbolic link")
		return
	case !mode.IsRegular():
		a.odd = true
		a.issues = append(a.issues, rel+" is not a regular file")
		return
	case hardLinks(fi) > 1:
		// agentmail refuses it as it refuses a symbolic link: writing it
		// would write the file's other name too.
		a.linked = true
		a.issues = append(a.issues, fmt.Sprintf("%s has %d hard links", rel, hardLinks(fi)))
		return
	}
	if uid, mine := ownedByMe(fi); !mine {
		a.foreign = true
		a.issues = append(a.issues, fmt.Sprintf("%s is owned by uid %d", rel, uid))
	}
	switch perm := mode.Perm(); {
	case perm&0o077 != 0:
		a.wide = true
		a.issues = append(a.issues, fmt.Sprintf("%s is %04o, not %04o", rel, perm, want))
	case perm&want != want:
		a.locked = true
		a.issues = append(a.issues, fmt.Sprintf("%s is %04o, not %04o", rel, perm, want))
	}
}

// walk looks at everything below dir, named relative to root.
func (a *permAudit) walk(root, dir string) {
	err := filepath.WalkDir(dir, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			a.issues = append(a.issues, err.Error())
			return nil
		}
		if path == dir {
			return nil
		}
		fi, err := de.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		rel, _ := filepath.Rel(root, path)
		a.look(rel, fi)
		return nil
	})
	if err != nil {
		a.issues = append(a.issues, err.Error())
	}
}

// detail names the first three issues and counts the rest.
func (a *permAudit) detail() string {
	detail := strings.Join(a.issues[:min(3, len(a.issues))], ", ")
	if len(a.issues) > 3 {
		detail += fmt.Sprintf(" and %d more", len(a.issues)-3)
	}
	return detail
}

// fix gives one command or step for each kind of issue found in dir.
func (a *permAudit) fix(dir string) string {
	var fixes []string
	if a.foreign {
		fixes = append(fixes, "sudo chown -R "+userName()+" "+dir)
	}
	if a.wide || a.locked {
		fixes = append(fixes, "chmod -R u+rwX,go-rwx "+dir)
	}
	if a.odd {
		fixes = append(fixes, "remove what is not a directory or a regular file")
	}
	if a.linked {
		fixes = append(fixes, "remove the files with other hard links")
	}
	return strings.Join(fixes, "; ")
}

// userName is the name of this user for a chown command.
func userName() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return fmt.Sprint(os.Getuid())
}

// namesCheck finds names that several windows of the session share: such
// windows would read each other's mail, so send and receive refuse them.
func (d *doctor) namesCheck() check {
	const name = "names"
	if d.sess == nil {
		return info(name, "not checked: not inside tmux", "")
	}
	ignored := map[string]bool{}
	if d.st != nil {
		var err error
		if ignored, err = d.st.Ignored(); err != nil {
			return problem(name, err.Error(), "")
		}
	}
	self := d.sess.Self.Name
	var others, seen []string
	for _, w := range d.sess.Windows {
		if ignored[w.Name] || slices.ContainsFunc(seen, func(n string) bool { return mailbox.SameMailbox(n, w.Name) }) {
			continue
		}
		seen = append(seen, w.Name)
		n, otherCase := 0, false
		for _, x := range d.sess.Windows {
			if mailbox.SameMailbox(x.Name, w.Name) {
				n++
				otherCase = otherCase || x.Name != w.Name
			}
		}
		if n < 2 {
			continue
		}
		if mailbox.SameMailbox(w.Name, self) {
			err := &tools.SharedNameError{Name: self, Windows: n, Own: true, Case: otherCase}
			return problem(name, err.Error(), "tmux rename-window -t "+d.sess.Self.ID+" NEWNAME, or rename the other window")
		}
		others = append(others, fmt.Sprintf("%q (%d windows)", w.Name, n))
	}
	if ignored[self] {
		return info(name, fmt.Sprintf("%q is listed in .agentmailignore: no agent can write to it", self), "remove it from .agentmailignore if it is an agent")
	}
	if len(others) > 0 {
		return info(name, "no mail can reach these names, each shared by several windows: "+strings.Join(others, ", "),
			"rename all but one window of each (tmux rename-window), or list the name in .agentmailignore if it is no agent")
	}
	return ok(name, fmt.Sprintf("no other window is named %q", self))
}

// mailmanCheck reports whether the mailman of this root runs. Its absence
// is not a problem: an assistant with a wake hook needs none.
func (d *doctor) mailmanCheck() check {
	const name = "mailman"
	if d.st == nil {
		return info(name, "not checked: no project root", "")
	}
	pid, err := mailman.Running(mailman.PIDPath(d.st))
	switch {
	case err != nil:
		return problem(name, err.Error(), "")
	case pid == 0:
		return info(name, "not running: nobody rings an idle agent when mail arrives (Claude Code's watch --hook wakes it without one)",
			"agentmail mailman --daemon, for Codex and Gemini CLI agents")
	}
	return ok(name, fmt.Sprintf("running (PID: %d)", pid))
}

// stateCheck reports this agent's status and unread mail, as the mailman
// sees them.
func (d *doctor) stateCheck(ctx context.Context) check {
	const name = "state"
	switch {
	case d.sess == nil:
		return info(name, "not checked: not inside tmux", "")
	case d.st == nil:
		return info(name, "not checked: no project root", "")
	}
	self := d.sess.Self.Name
	ctx, cancel := context.WithTimeout(ctx, tools.DefaultLockWait)
	defer cancel()
	states, err := d.st.States(ctx)
	if err != nil {
		return problem(name, err.Error(), "")
	}
	unread, err := d.st.Unread(ctx, self)
	if err != nil {
		return problem(name, err.Error(), "")
	}
	mail := fmt.Sprintf("%d unread", unread)
	i := slices.IndexFunc(states, func(s mailbox.State) bool { return s.Recipient == self })
	if i < 0 {
		return info(name, fmt.Sprintf("%q has no status yet, %s", self, mail), "the assistant's hooks set it (README, Hook set-up), or agentmail status ready")
	}
	status := states[i].Status
	detail := fmt.Sprintf("%q is %s, %s", self, status, mail)
	if status == mailbox.StatusOffline {
		return info(name, detail+"; the mailman does not ring it", "agentmail status ready, once the agent runs")
	}
	return ok(name, detail)
}
